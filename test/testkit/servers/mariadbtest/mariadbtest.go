/*
Copyright 2026 The Conveyor Authors.

Licensed under the Apache License, Version 2.0 (the "License");
you may not use this file except in compliance with the License.
You may obtain a copy of the License at

    http://www.apache.org/licenses/LICENSE-2.0

Unless required by applicable law or agreed to in writing, software
distributed under the License is distributed on an "AS IS" BASIS,
WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
See the License for the specific language governing permissions and
limitations under the License.
*/

// Package mariadbtest starts a real MariaDB server for tests and benchmarks:
// Debian's binaries (installed by hack/mariadb.sh), run as the unprivileged
// user mysql when the caller is root, in a temporary data folder, on a free
// loopback port, with the binary log on (log_bin, binlog_format=ROW, full
// row images; MariaDB writes GTIDs into every binary log) and durability
// switched off for speed. One server per test binary:
//
//	var db *mariadbtest.Server
//
//	func TestMain(m *testing.M) { os.Exit(mariadbtest.Run(m, &db)) }
//
//	func TestX(t *testing.T) { dsn := db.CreateDatabase(t); ... }
//
// Missing binaries fail the run (they do not skip it): make test installs
// them through hack/mariadb.sh.
package mariadbtest

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/conveyor-dev/conveyor/test/testkit/proc"
	"github.com/conveyor-dev/conveyor/test/testkit/servers/dbtest"
)

// User is the operating system user the server runs as when the caller is
// root (Debian's package creates it; mariadbd refuses root without --user).
const User = "mysql"

// Superuser is the database account of the tests: every privilege, with
// the grant option, from any host.
const Superuser = "conveyor"

// EnvBin names the environment variable that points at the folder holding
// mariadbd (hack/mariadb.sh prints it); without it /usr/sbin is tried.
const EnvBin = "CONVEYOR_MARIADB_BIN"

// ErrNoBinaries means the MariaDB server is not installed.
var ErrNoBinaries = errors.New("MariaDB server (mariadbd, mariadb-install-db) not found: run hack/mariadb.sh (make test does) or set " + EnvBin)

// Server is a running MariaDB server.
type Server struct {
	// Host and Port are where the server listens (127.0.0.1 and a free port).
	Host string
	Port int
	// Password is Superuser's password.
	Password string
	// BinDir holds mariadbd.
	BinDir string
	// Dir is the server's folder: data, socket, binary logs and log.
	Dir string

	proc    *proc.Process
	logFile string
	stop    sync.Once
	dbs     atomic.Int64
}

// Options tune a server.
type Options struct {
	// Settings are extra mariadbd options (name → value, as --name=value).
	Settings map[string]string
}

// FindBinaries returns the folder of mariadbd and the path of
// mariadb-install-db (Debian keeps them in /usr/sbin and /usr/bin).
func FindBinaries() (bin, installDB string, err error) {
	isFile := func(p string) bool { st, err := os.Stat(p); return err == nil && !st.IsDir() }
	dirs := []string{"/usr/sbin", "/usr/bin", "/usr/local/bin"}
	if d := os.Getenv(EnvBin); d != "" {
		if !isFile(filepath.Join(d, "mariadbd")) {
			return "", "", fmt.Errorf("%s=%s holds no mariadbd: %w", EnvBin, d, ErrNoBinaries)
		}
		dirs = append([]string{d}, dirs...)
	}
	for _, d := range dirs {
		if bin == "" && isFile(filepath.Join(d, "mariadbd")) {
			bin = d
		}
		if installDB == "" && isFile(filepath.Join(d, "mariadb-install-db")) {
			installDB = filepath.Join(d, "mariadb-install-db")
		}
	}
	if bin == "" || installDB == "" {
		return "", "", ErrNoBinaries
	}
	return bin, installDB, nil
}

// Run starts a server into *srv, runs the tests and stops the server; it
// returns the exit code for os.Exit. A server that cannot start fails the
// run with the reason.
func Run(m *testing.M, srv **Server) int {
	return dbtest.Run(m, "MariaDB", srv, func() (*Server, error) { return Start(Options{}) })
}

// Start initialises a data folder and starts a server on a free loopback
// port. Call Stop when done.
func Start(opts Options) (*Server, error) {
	bin, installDB, err := FindBinaries()
	if err != nil {
		return nil, err
	}
	cred, err := proc.UnprivilegedUser(User, "MariaDB runs as an unprivileged user; Debian's mariadb-server package creates it")
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "conveyor-mariadb-")
	if err != nil {
		return nil, fmt.Errorf("creating the server folder: %w", err)
	}
	began := time.Now()
	s := &Server{Host: "127.0.0.1", BinDir: bin, Dir: dir, logFile: filepath.Join(dir, "mariadb.log"), Password: dbtest.RandomHex(12)}
	ok := false
	defer func() {
		if !ok {
			_ = os.RemoveAll(dir)
		}
	}()
	if cred != nil {
		if err := os.Chown(dir, int(cred.Uid), int(cred.Gid)); err != nil {
			return nil, fmt.Errorf("handing %s to user %s: %w", dir, User, err)
		}
	}
	// Each server keeps its temporary files in a folder of its own: test
	// packages start servers side by side, and bootstraps sharing /tmp
	// failed ("Could not remove temporary table '/tmp/#sql-temptable-…'",
	// then "Unknown table 'mysql.tmp_user_sys'").
	tmp := filepath.Join(dir, "tmp")
	if err := os.Mkdir(tmp, 0o700); err != nil {
		return nil, fmt.Errorf("creating the server's temporary folder: %w", err)
	}
	if cred != nil {
		if err := os.Chown(tmp, int(cred.Uid), int(cred.Gid)); err != nil {
			return nil, fmt.Errorf("handing %s to user %s: %w", tmp, User, err)
		}
	}
	install := exec.Command(installDB, "--no-defaults", "--datadir="+filepath.Join(dir, "data"),
		"--auth-root-authentication-method=normal", "--skip-test-db", "--skip-name-resolve", "--innodb-log-file-size=16M",
		"--tmpdir="+tmp)
	install.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	install.Dir = dir
	install.Env = append(os.Environ(), "TMPDIR="+tmp)
	if out, err := install.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("mariadb-install-db: %w\n%s", err, out)
	}
	settings := map[string]string{
		"datadir":                        filepath.Join(dir, "data"),
		"tmpdir":                         tmp,
		"socket":                         filepath.Join(dir, "mariadb.sock"),
		"pid-file":                       filepath.Join(dir, "mariadb.pid"),
		"log-error":                      s.logFile,
		"bind-address":                   s.Host,
		"log-bin":                        filepath.Join(dir, "binlog"),
		"binlog-format":                  "ROW",
		"binlog-row-image":               "FULL",
		"server-id":                      "1",
		"gtid-strict-mode":               "ON",
		"log-slave-updates":              "ON",
		"skip-name-resolve":              "ON",
		"character-set-server":           "utf8mb4",
		"collation-server":               "utf8mb4_general_ci",
		"max-connections":                "300",
		"innodb-buffer-pool-size":        "64M",
		"innodb-log-file-size":           "16M",
		"innodb-flush-log-at-trx-commit": "0",
		"sync-binlog":                    "0",
		"innodb-doublewrite":             "0",
	}
	for k, v := range opts.Settings {
		settings[k] = v
	}
	for attempt := 0; ; attempt++ {
		port, err := dbtest.FreePort(s.Host)
		if err != nil {
			return nil, err
		}
		s.Port = port
		err = s.launch(cred, settings)
		if err == nil {
			break
		}
		if attempt >= 2 || !strings.Contains(s.Log(), "in use") {
			return nil, err
		}
		_ = os.Truncate(s.logFile, 0)
	}
	ok = true
	fmt.Fprintf(os.Stderr, "mariadbtest: MariaDB ready on %s:%d in %.1fs\n", s.Host, s.Port, time.Since(began).Seconds())
	return s, nil
}

func (s *Server) launch(cred *syscall.Credential, settings map[string]string) error {
	args := []string{"--no-defaults", "--port=" + strconv.Itoa(s.Port)}
	for k, v := range settings {
		args = append(args, "--"+k+"="+v)
	}
	cmd := exec.Command(filepath.Join(s.BinDir, "mariadbd"), args...)
	cmd.Dir = s.Dir
	// The server dies with the test binary, even when that is killed.
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred, Pdeathsig: syscall.SIGKILL, Setpgid: true}
	p, err := proc.Start(cmd, nil)
	if err != nil {
		return fmt.Errorf("starting mariadbd: %w", err)
	}
	s.proc = p
	// Root over TCP has no password until the test account exists.
	root := s.dsn("root", "", "")
	deadline := time.Now().Add(30 * time.Second)
	for {
		err := s.setUp(root)
		if err == nil {
			return nil
		}
		select {
		case <-p.Done():
			return fmt.Errorf("mariadbd exited during startup (%v); its log:\n%s", p.Err(), s.Log())
		default:
		}
		if time.Now().After(deadline) {
			_ = p.Stop(syscall.SIGKILL, time.Second)
			return fmt.Errorf("mariadbd did not accept connections within 30s (last error: %v); its log:\n%s", err, s.Log())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// setUp creates the test account and removes root's passwordless TCP login.
func (s *Server) setUp(rootDSN string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	db, err := sql.Open("mysql", rootDSN)
	if err != nil {
		return err
	}
	defer db.Close()
	for _, q := range []string{
		fmt.Sprintf("CREATE USER IF NOT EXISTS '%s'@'%%' IDENTIFIED BY '%s'", Superuser, s.Password),
		fmt.Sprintf("GRANT ALL PRIVILEGES ON *.* TO '%s'@'%%' WITH GRANT OPTION", Superuser),
	} {
		if _, err := db.ExecContext(ctx, q); err != nil {
			return err
		}
	}
	return nil
}

// PID returns the process id of mariadbd, 0 when it is not running.
func (s *Server) PID() int {
	if s.proc == nil {
		return 0
	}
	return s.proc.Pid()
}

// Log returns the server's error log so far.
func (s *Server) Log() string {
	b, _ := os.ReadFile(s.logFile)
	return string(b)
}

func (s *Server) dsn(user, password, database string) string {
	c := mysql.NewConfig()
	c.User, c.Passwd, c.Net, c.Addr, c.DBName = user, password, "tcp", net.JoinHostPort(s.Host, strconv.Itoa(s.Port)), database
	return c.FormatDSN()
}

// URL returns a mysql:// URL for Superuser and the database, as the
// MySQL connectors' connection.url takes it.
func (s *Server) URL(database string) string {
	return fmt.Sprintf("mysql://%s:%s@%s/%s", Superuser, s.Password, net.JoinHostPort(s.Host, strconv.Itoa(s.Port)), database)
}

// DSN returns a go-sql-driver data source name for Superuser and the
// database.
func (s *Server) DSN(database string) string { return s.dsn(Superuser, s.Password, database) }

// Exec runs SQL statements as Superuser in a database ("" for none).
func (s *Server) Exec(ctx context.Context, database string, stmts ...string) error {
	db, err := sql.Open("mysql", s.DSN(database))
	if err != nil {
		return err
	}
	defer db.Close()
	conn, err := db.Conn(ctx)
	if err != nil {
		return fmt.Errorf("connecting to database %q: %w", database, err)
	}
	defer conn.Close()
	for _, q := range stmts {
		if _, err := conn.ExecContext(ctx, q); err != nil {
			return fmt.Errorf("%s: %w", q, err)
		}
	}
	return nil
}

// NewDatabase creates a fresh database named after prefix and returns its
// name; it is dropped by DropDatabase or with the server.
func (s *Server) NewDatabase(ctx context.Context, prefix string) (string, error) {
	name := dbtest.DatabaseName(prefix, s.dbs.Add(1))
	if err := s.Exec(ctx, "", "CREATE DATABASE `"+name+"`"); err != nil {
		return "", err
	}
	return name, nil
}

// DropDatabase drops a database.
func (s *Server) DropDatabase(ctx context.Context, name string) error {
	return s.Exec(ctx, "", "DROP DATABASE IF EXISTS `"+strings.ReplaceAll(name, "`", "``")+"`")
}

// CreateDatabase creates a database for the test, dropped at its end, and
// returns its name.
func (s *Server) CreateDatabase(t testing.TB) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	name, err := s.NewDatabase(ctx, t.Name())
	if err != nil {
		t.Fatalf("creating a test database: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := s.DropDatabase(ctx, name); err != nil {
			t.Logf("dropping test database %s: %v", name, err)
		}
	})
	return name
}

// ExecT runs SQL statements in a database, failing the test on the first
// error.
func (s *Server) ExecT(t testing.TB, database string, stmts ...string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := s.Exec(ctx, database, stmts...); err != nil {
		t.Fatal(err)
	}
}

// Stop shuts the server down (SIGTERM, then kill) and removes its folder.
func (s *Server) Stop() error {
	var err error
	s.stop.Do(func() {
		if s.proc != nil {
			if stopErr := s.proc.Stop(syscall.SIGTERM, 10*time.Second); stopErr != nil {
				err = fmt.Errorf("mariadbd %w", stopErr)
			}
		}
		if rmErr := os.RemoveAll(s.Dir); rmErr != nil && err == nil {
			err = rmErr
		}
	})
	return err
}
