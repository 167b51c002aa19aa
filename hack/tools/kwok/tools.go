//go:build tools

// Package tools pins kwok, which simulates the local cluster's nodes and the
// lifecycle of the pods bound to them without a kubelet.
package tools

import _ "sigs.k8s.io/kwok/cmd/kwok"
