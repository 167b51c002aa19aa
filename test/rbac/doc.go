// Package rbac proves the processes' generated roles on a real API server,
// which internal/testenv starts with RBAC authorization (envtest's default, its
// admin in system:masters): the kustomization's ServiceAccounts, roles and
// bindings are applied, SubjectAccessReviews check each process's rights
// verb by verb, and the product runs its end-to-end path with the worker
// and the starter impersonating their ServiceAccounts, so that a right
// their code uses and their role lacks fails a test.
package rbac
