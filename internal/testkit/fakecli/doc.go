// Package fakecli is a fake Claude Code CLI for tests. It is the test binary
// itself, re-executed with a few environment variables set (the
// GO_WANT_HELPER_PROCESS pattern of hashicorp/go-plugin's tests), so a test
// can spawn a "CLI" that speaks the stream-json control protocol and can
// misbehave on demand: malformed or huge lines, hangs, crashes, ANSI noise on
// stderr, ignored signals, and process trees that escape their process group.
//
// Wire it up in the consuming package's TestMain:
//
//	func TestMain(m *testing.M) {
//		fakecli.RunIfHelper() // never returns inside the fake CLI
//		os.Exit(m.Run())
//	}
//
// then spawn it like the real binary:
//
//	path, env := fakecli.Command(fakecli.ModeTool, fakecli.WithPidFile(pidFile))
//	cmd := exec.Command(path, "-p", "--output-format", "stream-json",
//		"--input-format", "stream-json", "--verbose")
//	cmd.Env = append(os.Environ(), env...)
//
// Every mode except ModeHang behaves like the real CLI in background mode:
// it reads NDJSON from stdin, answers control_request lines with
// control_response lines as soon as it reads them, and runs one turn for each
// "user" line (system/init, assistant, ..., result). Only the way the turn
// goes differs between modes. The flags --resume, --fork-session,
// --permission-mode and --model are honoured; all other arguments are ignored.
package fakecli
