// Package harden makes this process harder to reach for other processes of
// the same user: the agent's own tool commands run as that user, and a
// helper's stdin, environment and memory are what they would reach for
// (issue 22: a tool wrote an "approve" command to /proc/<helper>/fd/0).
//
// NoDump clears the process's dumpable flag (Linux PR_SET_DUMPABLE): the
// kernel then owns /proc/PID/{fd,environ,mem,…} as root, so a same-user
// process can neither open the helper's pipes through /proc nor read its
// environment, nor ptrace it. Root, or a user with CAP_SYS_PTRACE, passes
// that check anyway; an agent running as root (or with sudo) defeats every
// same-host defence (SECURITY.md). Children we start get their own flag
// back at execve, so the CLI and its tools are unaffected.
package harden
