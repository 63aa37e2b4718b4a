// Package contract holds GitHub's REST API description (a subset of @octokit/openapi 23.0.2 in testdata,
// every $ref resolved) as the contract internal/githubtest serves under: Match finds the operation a
// request asks for, ValidateRequest and ValidateResponse check both sides of the exchange, and Complete fills
// the required fields a handler left out with neutral values of the right type.
//
//	op, err := contract.Match(r)           // "no such operation" when GitHub has none
//	err = op.ValidateRequest(r, body)
//	out, err := op.Complete(http.StatusOK, map[string]any{"id": 1})
//	err = op.ValidateResponse(ctx, contract.Response{Status: http.StatusOK, Header: hdr, Body: out})
package contract
