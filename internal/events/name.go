package events

import (
	"crypto/sha256"
	"encoding/hex"

	corev1 "k8s.io/api/core/v1"
)

// maxPoolPrefix is how much of a pool's name starts its events' names: the
// rest of an object name's 253 characters is left to the dot and the hash.
const maxPoolPrefix = 200

// Name is the name of the event with key about the object regarding: the
// object's name, a dot and 16 hex digits of a hash of its UID and the key.
// The same occurrence (the same object incarnation, the same key) always
// has the same name, so whoever records it again (a retry after a crash,
// another worker, the pool keeper and a switch reporting one failure)
// finds it there, and it is recorded once.
//
// There are two spellings, both released, and so fixed: a name spelled
// another way would record again an event a retry must find. A WorkerPool's
// event hashes the UID, a NUL and the key, and starts with at most 200
// characters of the pool's name; any other object's (a SandboxConfig's)
// hashes the UID, a slash and the key, and starts with its whole name.
func Name(regarding corev1.ObjectReference, key string) string {
	prefix, sep := regarding.Name, "/"
	if regarding.Kind == KindWorkerPool {
		sep = "\x00"
		if len(prefix) > maxPoolPrefix {
			prefix = prefix[:maxPoolPrefix]
		}
	}
	sum := sha256.Sum256([]byte(string(regarding.UID) + sep + key))
	return prefix + "." + hex.EncodeToString(sum[:8])
}
