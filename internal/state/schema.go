package state

import (
	"encoding/json"
	"fmt"
	"strconv"

	corev1 "k8s.io/api/core/v1"
)

// SchemaVersion is the version of the state's encoding this build reads and
// writes. Each state ConfigMap records, in data["schema.json"], the version
// it was written with and the oldest version able to read and write it
// without loss; a state written before versions were recorded (no
// schema.json) is version 0.
//
// Version history:
//
//	0: the records as keys of the ConfigMap (plain, gzip or split into
//	   parts; statesize.go). Read as it is by version 1.
//	1: version 0 plus schema.json. Builds of version 0 read it (they ignore
//	   schema.json), so its oldest reader is 0.
//	   phase.json (the lifecycle phase, EnvState.Phase) joined it: a build
//	   that does not know it drops it or carries it over stale, and it is
//	   believed only beside the records it was written with (readPhase), so
//	   its oldest reader stays 0.
//	   breakglass.json (EnvState.BreakGlass) joined it too: a build that does
//	   not know it carries it over and lets no plan through a freeze by it,
//	   so its oldest reader stays 0.
//
// A later version that only adds keys a build of this version does not know
// keeps OldestReader: builds of this version carry such keys over untouched
// when they write, and may leave them stale. A version that changes the
// meaning of a key, or adds a field inside a record this version decodes (a
// build of this version would drop it when writing), raises OldestReader to
// itself, and builds of this version then refuse the state (SchemaError)
// without writing.
const SchemaVersion = 1

// schemaOldestReader is the oldest schema version that reads and writes what
// this build writes without loss.
const schemaOldestReader = 0

// keySchema is data["schema.json"]: the schema the state was written with.
const keySchema = "schema.json"

// schemaBytes is what schema.json takes of a state's budget, at most.
const schemaBytes = 64

// schema is data["schema.json"].
type schema struct {
	// Version is the schema the state was written with.
	Version int `json:"version"`
	// OldestReader is the oldest schema version that reads and writes the
	// state without losing or misreading anything.
	OldestReader int `json:"oldestReader"`
}

// schemaStamp, when the linker sets it (-ldflags "-X
// github.com/stagehand-gitops/stagehand/internal/state.schemaStamp=N", which
// hack/release's --state-schema N passes), makes this build write state
// schema N, above SchemaVersion, with N as its oldest reader: the same
// records, marked as a schema that builds of SchemaVersion must refuse. It
// is a test's knob, never set in a release: with it two builds of one
// commit are a release and the next one that raised the schema, which
// internal/chart's TestInstallRelease upgrades to and rolls back from.
var schemaStamp string

// current is the schema this build writes: SchemaVersion, unless stamped.
var current = func() schema {
	s, err := stamped(schemaStamp)
	if err != nil {
		panic(err) // a build linked with a malformed stamp must not run
	}
	return s
}()

// stamped is the schema a build stamped with stamp writes: this source's
// when stamp is empty, else {stamp, stamp} for a number above SchemaVersion.
func stamped(stamp string) (schema, error) {
	if stamp == "" {
		return schema{Version: SchemaVersion, OldestReader: schemaOldestReader}, nil
	}
	n, err := strconv.Atoi(stamp)
	if err != nil || n <= SchemaVersion {
		return schema{}, fmt.Errorf("stamped state schema %q: want a version above this source's %d", stamp, SchemaVersion)
	}
	return schema{Version: n, OldestReader: n}, nil
}

// SchemaError is a state this build must not read or write: it was written
// with a newer schema whose oldest reader is newer than this build's. A
// Store returns it from Load and Update without writing anything.
type SchemaError struct {
	// ConfigMap is the state's ConfigMap, namespace/name.
	ConfigMap string
	// Found is the schema the state was written with, OldestReader the
	// oldest schema that may read it.
	Found, OldestReader int
	// Build is the schema this build reads and writes.
	Build int
}

func (e *SchemaError) Error() string {
	return fmt.Sprintf("state in configmap %s has schema version %d, readable by builds of schema %d or later; "+
		"this build reads and writes schema version %d, so it neither reads nor writes that state: run a Stagehand release "+
		"of state schema %d or later", e.ConfigMap, e.Found, e.OldestReader, e.Build, e.OldestReader)
}

// readSchema returns the schema cm was written with, and a *SchemaError when
// this build (of schema mine) must not read it.
func readSchema(cm *corev1.ConfigMap, mine schema) (schema, error) {
	raw, ok := cm.Data[keySchema]
	if !ok {
		return schema{}, nil
	}
	var s schema
	if err := json.Unmarshal([]byte(raw), &s); err != nil {
		return schema{}, fmt.Errorf("decoding %s of configmap %s/%s: %w", keySchema, cm.Namespace, cm.Name, err)
	}
	if s.Version < 0 || s.OldestReader < 0 || s.OldestReader > s.Version {
		return schema{}, fmt.Errorf("decoding %s of configmap %s/%s: version %d with oldest reader %d is not a schema",
			keySchema, cm.Namespace, cm.Name, s.Version, s.OldestReader)
	}
	if s.OldestReader > mine.Version {
		return s, &SchemaError{ConfigMap: cm.Namespace + "/" + cm.Name, Found: s.Version, OldestReader: s.OldestReader, Build: mine.Version}
	}
	return s, nil
}

// knownKeys are the data and binaryData keys this build reads and writes:
// every record in each of its layouts (statesize.go), and schema.json.
var knownKeys = func() map[string]bool {
	keys := map[string]bool{keySchema: true}
	for _, k := range []string{keyPending, keyInFlight, keyHistory, keyStatus, keyHandover, keyHandovers, keyUnreported,
		keyLastID, keySequence, keyRollback, keyFailed, keyPin, keyTrimmed, keyPhase, keyBreakGlass} {
		keys[k], keys[k+suffixGzip], keys[k+suffixParts] = true, true, true
	}
	return keys
}()

// foreignKeys are the keys of a state ConfigMap a newer build wrote that
// this one does not know, in its data and its binary data.
type foreignKeys struct {
	data   map[string]string
	binary map[string][]byte
}

// unknownKeys are the keys of cm a newer build wrote that this one does not
// know, to carry over as they are, and their size in bytes.
func unknownKeys(cm *corev1.ConfigMap) (foreignKeys, int) {
	var (
		data   map[string]string
		binary map[string][]byte
		size   int
	)
	for k, v := range cm.Data {
		if !knownKeys[k] {
			if data == nil {
				data = map[string]string{}
			}
			data[k], size = v, size+len(k)+len(v)
		}
	}
	for k, v := range cm.BinaryData {
		if !knownKeys[k] {
			if binary == nil {
				binary = map[string][]byte{}
			}
			binary[k], size = v, size+len(k)+len(v)
		}
	}
	return foreignKeys{data: data, binary: binary}, size
}

// stamp marks e as written with the newer of found (the schema the state
// had) and mine, and carries over the keys a newer build wrote that this
// one does not know (foreign), so that a newer replica beside this one
// loses none of them.
func stamp(e *encoded, found, mine schema, foreign foreignKeys) error {
	data, binary := foreign.data, foreign.binary
	s := mine
	if found.Version > s.Version {
		s.Version = found.Version
	}
	if found.OldestReader > s.OldestReader {
		s.OldestReader = found.OldestReader
	}
	b, err := json.Marshal(s)
	if err != nil {
		return fmt.Errorf("encoding %s: %w", keySchema, err)
	}
	e.data[keySchema] = string(b)
	for k, v := range data {
		if _, clash := e.data[k]; clash {
			return fmt.Errorf("carrying over key %s: this build wrote it too", k)
		}
		e.data[k] = v
	}
	for k, v := range binary {
		if _, clash := e.binary[k]; clash {
			return fmt.Errorf("carrying over key %s: this build wrote it too", k)
		}
		if e.binary == nil {
			e.binary = map[string][]byte{}
		}
		e.binary[k] = v
	}
	return nil
}
