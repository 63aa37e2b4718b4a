// Package promoter is `prbot serve`'s promotion loop: a Server hears the
// manifests repository's webhooks (pushes to the base branch, completed
// check runs, final commit statuses), each promotion window's cron
// schedule, the end of a soak and a resync interval, and evaluates the
// promotions of pipeline.yaml through the bot (a Promoter, *prbot.Bot) on
// one worker that coalesces bursts. It never logs: each evaluation's result
// goes to WithResultHandler.
package promoter
