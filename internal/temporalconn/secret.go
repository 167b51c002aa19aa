package temporalconn

import "strings"

// LooksLikeKeyMaterial reports whether a setting that should hold a path
// holds PEM or other multi-line content instead (TEMPORAL_TLS_CLIENT_KEY_PATH
// set to the key itself, a common slip): such a value is never printed.
func LooksLikeKeyMaterial(v string) bool {
	return strings.Contains(v, "-----BEGIN") || strings.ContainsAny(v, "\n\r")
}

// redacted says whether a secret is set, never what it is.
func redacted(v string) string {
	if v == "" {
		return ""
	}
	return "[redacted]"
}

// redactPath prints a path, unless it is key material itself.
func redactPath(v string) string {
	if LooksLikeKeyMaterial(v) {
		return redacted(v)
	}
	return v
}
