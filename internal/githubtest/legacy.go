package githubtest

import (
	"time"
)

// The methods below are the Server's former shape, each forwarding to the part it moved to, kept while
// other branches still call them; they go once every caller uses the parts.

// Deprecated: use Repo(owner, name).CheckRuns.
func (s *Server) CheckRuns(owner, name string) []CheckRun {
	return s.Repo(owner, name).CheckRuns()
}

// Deprecated: use Repo(owner, name).CheckRun.
func (s *Server) CheckRun(owner, name string, id int64) (CheckRun, bool) {
	return s.Repo(owner, name).CheckRun(id)
}

// Deprecated: use Repo(owner, name).AddCheckRun.
func (s *Server) AddCheckRun(owner, name string, cr CheckRun) int64 {
	return s.Repo(owner, name).AddCheckRun(cr)
}

// Deprecated: use Repo(owner, name).Deployments.
func (s *Server) Deployments(owner, name string) []Deployment {
	return s.Repo(owner, name).Deployments()
}

// Deprecated: use Repo(owner, name).SetStatus.
func (s *Server) SetStatus(owner, name string, sha, context, state string) {
	s.Repo(owner, name).SetStatus(sha, context, state)
}

// Deprecated: use Repo(owner, name).Comments.
func (s *Server) Comments(owner, name string, number int) []Comment {
	return s.Repo(owner, name).Comments(number)
}

// Deprecated: use Repo(owner, name).PullRequests.
func (s *Server) PullRequests(owner, name string) []PullRequest {
	return s.Repo(owner, name).PullRequests()
}

// Deprecated: use Repo(owner, name).OpenPullRequest.
func (s *Server) OpenPullRequest(owner, name string, head, base, title, author string) int {
	return s.Repo(owner, name).OpenPullRequest(head, base, title, author)
}

// Deprecated: use Repo(owner, name).RecordMerge.
func (s *Server) RecordMerge(owner, name string, number int, mergeSHA, mergedBy string) {
	s.Repo(owner, name).RecordMerge(number, mergeSHA, mergedBy)
}

// Deprecated: use Repo(owner, name).Commit.
func (s *Server) Commit(owner, name string, branch string, files map[string]string, message string) string {
	return s.Repo(owner, name).Commit(branch, files, message)
}

// Deprecated: use Repo(owner, name).MirrorCommit.
func (s *Server) MirrorCommit(owner, name string, branch, sha string, files map[string]string, message string) {
	s.Repo(owner, name).MirrorCommit(branch, sha, files, message)
}

// Deprecated: use Repo(owner, name).SetCommitAuthor.
func (s *Server) SetCommitAuthor(owner, name string, sha, login string) {
	s.Repo(owner, name).SetCommitAuthor(sha, login)
}

// Deprecated: use Repo(owner, name).SetCommitPeople.
func (s *Server) SetCommitPeople(owner, name string, sha string, author, committer Person) {
	s.Repo(owner, name).SetCommitPeople(sha, author, committer)
}

// Deprecated: use Repo(owner, name).Branch.
func (s *Server) Branch(owner, name string, branch string) string {
	return s.Repo(owner, name).Branch(branch)
}

// Deprecated: use Repo(owner, name).File.
func (s *Server) File(owner, name string, ref, path string) (string, bool) {
	return s.Repo(owner, name).File(ref, path)
}

// Deprecated: use Repo(owner, name).Files.
func (s *Server) Files(owner, name string, ref string) map[string]string {
	return s.Repo(owner, name).Files(ref)
}

// Deprecated: use Repo(owner, name).CommitMessage.
func (s *Server) CommitMessage(owner, name string, ref string) string {
	return s.Repo(owner, name).CommitMessage(ref)
}

// Deprecated: use Repo(owner, name).SetPermission.
func (s *Server) SetPermission(owner, name string, login, role string) {
	s.Repo(owner, name).SetPermission(login, role)
}

// Deprecated: use Repo(owner, name).SetPublic.
func (s *Server) SetPublic(owner, name string) {
	s.Repo(owner, name).SetPublic()
}

// Deprecated: use Webhooks(owner, name).CheckRunAction.
func (s *Server) CheckRunActionDelivery(owner, name string, id int64, identifier, sender string) Delivery {
	return s.Webhooks(owner, name).CheckRunAction(id, identifier, sender)
}

// Deprecated: use Webhooks(owner, name).CheckRun.
func (s *Server) CheckRunDelivery(owner, name string, id int64, action, sender string) Delivery {
	return s.Webhooks(owner, name).CheckRun(id, action, sender)
}

// Deprecated: use Webhooks(owner, name).Status.
func (s *Server) StatusDelivery(owner, name string, sha, context, state, sender string) Delivery {
	return s.Webhooks(owner, name).Status(sha, context, state, sender)
}

// Deprecated: use Webhooks(owner, name).PullRequest.
func (s *Server) PullRequestDelivery(owner, name string, number int, action, sender string) Delivery {
	return s.Webhooks(owner, name).PullRequest(number, action, sender)
}

// Deprecated: use Webhooks(owner, name).Push.
func (s *Server) PushDelivery(owner, name string, branch, before, after, sender string) Delivery {
	return s.Webhooks(owner, name).Push(branch, before, after, sender)
}

// Deprecated: use OAuth().EnableDeviceFlow.
func (s *Server) EnableDeviceFlow(clientID string, interval, step time.Duration) {
	s.OAuth().EnableDeviceFlow(clientID, interval, step)
}

// Deprecated: use OAuth().ForceSlowDown.
func (s *Server) ForceSlowDown(n int) {
	s.OAuth().ForceSlowDown(n)
}

// Deprecated: use OAuth().PendingUserCodes.
func (s *Server) PendingUserCodes() []string {
	return s.OAuth().PendingUserCodes()
}

// Deprecated: use OAuth().AuthorizeDevice.
func (s *Server) AuthorizeDevice(userCode, login string) error {
	return s.OAuth().AuthorizeDevice(userCode, login)
}

// Deprecated: use OAuth().DevicePolls.
func (s *Server) DevicePolls() (total, early int) {
	return s.OAuth().DevicePolls()
}

// Deprecated: use OAuth().EnableWebFlow.
func (s *Server) EnableWebFlow(clientID, secret, callback string) {
	s.OAuth().EnableWebFlow(clientID, secret, callback)
}

// Deprecated: use OAuth().SignInWeb.
func (s *Server) SignInWeb(login string) {
	s.OAuth().SignInWeb(login)
}

// Deprecated: use OAuth().CodesExchanged.
func (s *Server) CodesExchanged() int {
	return s.OAuth().CodesExchanged()
}

// Deprecated: use OAuth().UserToken.
func (s *Server) UserToken(login string) string {
	return s.OAuth().UserToken(login)
}

// Deprecated: use OAuth().RevokeUserToken.
func (s *Server) RevokeUserToken(tok string) {
	s.OAuth().RevokeUserToken(tok)
}

// Deprecated: use App().ID.
func (s *Server) AppID() int64 {
	return s.App().ID()
}

// Deprecated: use App().InstallationID.
func (s *Server) InstallationID() int64 {
	return s.App().InstallationID()
}

// Deprecated: use App().PrivateKeyPEM.
func (s *Server) AppPrivateKeyPEM() []byte {
	return s.App().PrivateKeyPEM()
}

// Deprecated: use App().TokensIssued.
func (s *Server) TokensIssued() int {
	return s.App().TokensIssued()
}

// Deprecated: use Faults().Inject.
func (s *Server) Inject(f Fault) {
	s.Faults().Inject(f)
}

// Deprecated: use Faults().Left.
func (s *Server) FaultsLeft() int {
	return s.Faults().Left()
}

// Deprecated: use Faults().SetLatency.
func (s *Server) SetLatency(d time.Duration) {
	s.Faults().SetLatency(d)
}

// Deprecated: use Faults().SetRateLimit.
func (s *Server) SetRateLimit(limit, remaining int) {
	s.Faults().SetRateLimit(limit, remaining)
}

// Deprecated: use Faults().RateLimitUsed.
func (s *Server) RateLimitUsed() int {
	return s.Faults().RateLimitUsed()
}
