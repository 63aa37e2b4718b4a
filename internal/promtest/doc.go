// Package promtest runs a real Prometheus server for tests, scraping
// exporters the test serves, so that PromQL checks are judged by the real
// query engine.
package promtest
