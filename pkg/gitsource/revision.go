package gitsource

// ShortRevisionLength is how many characters of a revision Stagehand's
// messages, logs, Events and pages show.
const ShortRevisionLength = 12

// ShortRevision is rev as Stagehand's messages, logs, Events and pages
// abbreviate a revision: its first ShortRevisionLength characters, or all
// of a shorter one. (GitHub's own abbreviation, in pull request texts, is
// seven characters; that is not this.)
func ShortRevision(rev string) string {
	if len(rev) > ShortRevisionLength {
		return rev[:ShortRevisionLength]
	}
	return rev
}
