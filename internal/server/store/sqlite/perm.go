package sqlite

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
)

// privateMode is the mode of the database and of SQLite's files beside it:
// they hold every prompt, command and answer, so only the owner reads them,
// wherever the file is (--db sqlite:/elsewhere has no data dir around it).
const privateMode fs.FileMode = 0o600

// sidecars are the files SQLite keeps beside the database: the WAL, its
// shared-memory index, and the rollback journal used before WAL is on.
var sidecars = []string{"-wal", "-shm", "-journal"}

// createPrivate makes sure the database file exists with privateMode before
// SQLite opens it. SQLite creates the -wal, -shm and -journal files with
// the mode of the database file, so a database created here 0600 has 0600
// companions; setting the process umask instead would race with every
// other goroutine creating files. An existing database whose group or
// others may read or write it is tightened to 0600.
func createPrivate(path string) error {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, privateMode)
	if err == nil {
		// The mode of a new file is privateMode less the umask: never looser.
		return f.Close()
	}
	if !errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("create %s (mode 0600): %w", path, err)
	}
	return restrict(path)
}

// restrictSidecars tightens the files beside the database that exist now
// (left looser by an older version, or by a database that was 0644 when
// they were created).
func restrictSidecars(path string) error {
	var errs []error
	for _, s := range sidecars {
		errs = append(errs, restrict(path+s))
	}
	return errors.Join(errs...)
}

// restrict takes the group's and others' permissions off path, if it exists
// and is a regular file.
func restrict(path string) error {
	fi, err := os.Stat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("check the mode of %s: %w", path, err)
	}
	if !fi.Mode().IsRegular() || fi.Mode().Perm()&0o077 == 0 {
		return nil
	}
	if err := os.Chmod(path, fi.Mode().Perm()&^0o077); err != nil {
		return fmt.Errorf("make %s private (chmod 600; it is %#o): %w", path, fi.Mode().Perm(), err)
	}
	return nil
}

// LooseDir reports whether dir lets its group or others read or write it,
// and its mode: a database there can be listed, or replaced, by other
// users even though the files are 0600. A directory that cannot be read
// is not reported.
func LooseDir(dir string) (fs.FileMode, bool) {
	fi, err := os.Stat(dir)
	if err != nil || !fi.IsDir() {
		return 0, false
	}
	return fi.Mode().Perm(), fi.Mode().Perm()&0o066 != 0
}
