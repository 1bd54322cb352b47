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

// Package pgtest starts a real PostgreSQL server for tests and benchmarks:
// Debian's binaries (installed by hack/postgres.sh), run as the unprivileged
// user conveyor-pg when the caller is root, in a temporary data folder, on a
// free loopback port, with wal_level=logical and durability switched off
// for speed. One server per test binary:
//
//	var pg *pgtest.Server
//
//	func TestMain(m *testing.M) { os.Exit(pgtest.Run(m, &pg)) }
//
//	func TestX(t *testing.T) { url := pg.CreateDatabase(t); ... }
//
// Missing binaries fail the run (they do not skip it): make test installs
// them through hack/postgres.sh.
package pgtest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/conveyor-dev/conveyor/test/testkit/proc"
	"github.com/conveyor-dev/conveyor/test/testkit/servers/dbtest"
)

// User is the operating system user the server runs as when the caller is
// root (PostgreSQL refuses to run as root).
const User = "conveyor-pg"

// Superuser is the database superuser of the test server.
const Superuser = "postgres"

// EnvBin names the environment variable that points at a folder holding
// initdb and postgres; without it the newest /usr/lib/postgresql/*/bin wins.
const EnvBin = "CONVEYOR_PG_BIN"

// ErrNoBinaries means the PostgreSQL server binaries are not installed.
var ErrNoBinaries = errors.New("PostgreSQL server binaries (initdb, postgres) not found: run hack/postgres.sh (make test does) or set " + EnvBin)

// Server is a running PostgreSQL server.
type Server struct {
	// Host and Port are where the server listens (127.0.0.1 and a free port).
	Host string
	Port int
	// Password is the superuser's password (SCRAM authentication over TCP).
	Password string
	// BinDir holds the server binaries used.
	BinDir string
	// Dir is the data folder.
	Dir string

	proc    *proc.Process
	logFile string
	stop    sync.Once
	dbs     atomic.Int64
}

// Options tune a server.
type Options struct {
	// Settings are extra postgres -c settings (name → value).
	Settings map[string]string
}

// FindBinaries returns the folder with initdb and postgres: $CONVEYOR_PG_BIN,
// else the highest version under /usr/lib/postgresql.
func FindBinaries() (string, error) {
	ok := func(dir string) bool {
		for _, b := range []string{"initdb", "postgres"} {
			if st, err := os.Stat(filepath.Join(dir, b)); err != nil || st.IsDir() {
				return false
			}
		}
		return true
	}
	if d := os.Getenv(EnvBin); d != "" {
		if ok(d) {
			return d, nil
		}
		return "", fmt.Errorf("%s=%s holds no initdb and postgres: %w", EnvBin, d, ErrNoBinaries)
	}
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	type cand struct {
		dir string
		v   float64
	}
	var cands []cand
	for _, d := range dirs {
		v, err := strconv.ParseFloat(filepath.Base(filepath.Dir(d)), 64)
		if err == nil && ok(d) {
			cands = append(cands, cand{d, v})
		}
	}
	if len(cands) == 0 {
		return "", ErrNoBinaries
	}
	sort.Slice(cands, func(i, j int) bool { return cands[i].v > cands[j].v })
	return cands[0].dir, nil
}

// Run starts a server into *srv, runs the tests and stops the server; it
// returns the exit code for os.Exit. A server that cannot start fails the
// run with the reason.
func Run(m *testing.M, srv **Server) int {
	return dbtest.Run(m, "PostgreSQL", srv, func() (*Server, error) { return Start(Options{}) })
}

// Start initialises a data folder and starts a server on a free loopback
// port. Call Stop when done.
func Start(opts Options) (*Server, error) {
	bin, err := FindBinaries()
	if err != nil {
		return nil, err
	}
	cred, err := credential()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "conveyor-pg-")
	if err != nil {
		return nil, fmt.Errorf("creating the data folder: %w", err)
	}
	s := &Server{Host: "127.0.0.1", BinDir: bin, Dir: filepath.Join(dir, "data"), logFile: filepath.Join(dir, "postgres.log")}
	ok := false
	defer func() {
		if !ok {
			_ = os.RemoveAll(dir)
		}
	}()
	s.Password = dbtest.RandomHex(12)
	pwfile := filepath.Join(dir, "pwfile")
	if err := os.WriteFile(pwfile, []byte(s.Password+"\n"), 0o600); err != nil {
		return nil, fmt.Errorf("writing the password file: %w", err)
	}
	if err := os.Mkdir(s.Dir, 0o700); err != nil {
		return nil, fmt.Errorf("creating the data folder: %w", err)
	}
	if cred != nil {
		// The parent stays root-owned but traversable; data and password
		// file belong to the server's user.
		if err := os.Chmod(dir, 0o755); err != nil {
			return nil, err
		}
		for _, p := range []string{pwfile, s.Dir} {
			if err := os.Chown(p, int(cred.Uid), int(cred.Gid)); err != nil {
				return nil, fmt.Errorf("handing %s to user %s: %w", p, User, err)
			}
		}
	}
	initdb := exec.Command(filepath.Join(bin, "initdb"), "-D", s.Dir, "-U", Superuser, "--pwfile", pwfile,
		"--auth-local=trust", "--auth-host=scram-sha-256", "-E", "UTF8", "--locale=C", "--no-sync", "--no-instructions")
	initdb.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	initdb.Dir = dir
	if out, err := initdb.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("initdb: %w\n%s", err, out)
	}
	_ = os.Remove(pwfile)

	settings := map[string]string{
		"listen_addresses":                s.Host,
		"unix_socket_directories":         s.Dir,
		"wal_level":                       "logical",
		"max_replication_slots":           "16",
		"max_wal_senders":                 "16",
		"max_connections":                 "200",
		"fsync":                           "off",
		"synchronous_commit":              "off",
		"full_page_writes":                "off",
		"shared_buffers":                  "128MB",
		"max_wal_size":                    "1GB",
		"autovacuum_naptime":              "1",
		"log_min_messages":                "warning",
		"log_min_error_statement":         "panic",
		"password_encryption":             "scram-sha-256",
		"max_logical_replication_workers": "4",
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
		err = s.launch(bin, cred, settings)
		if err == nil {
			break
		}
		if attempt >= 2 || !strings.Contains(err.Error(), "in use") {
			return nil, err
		}
	}
	ok = true
	return s, nil
}

func (s *Server) launch(bin string, cred *syscall.Credential, settings map[string]string) error {
	args := []string{"-D", s.Dir, "-p", strconv.Itoa(s.Port)}
	keys := make([]string, 0, len(settings))
	for k := range settings {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		args = append(args, "-c", k+"="+settings[k])
	}
	logf, err := os.OpenFile(s.logFile, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("opening the server log: %w", err)
	}
	cmd := exec.Command(filepath.Join(bin, "postgres"), args...)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.Dir = s.Dir
	// The server dies with the test binary, even when that is killed.
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred, Pdeathsig: syscall.SIGQUIT, Setpgid: true}
	p, err := proc.Start(cmd, func() { _ = logf.Close() })
	if err != nil {
		_ = logf.Close()
		return fmt.Errorf("starting postgres: %w", err)
	}
	s.proc = p
	deadline := time.Now().Add(30 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		conn, err := pgx.Connect(ctx, s.URL("postgres"))
		cancel()
		if err == nil {
			_ = conn.Close(context.Background())
			return nil
		}
		select {
		case <-p.Done():
			return fmt.Errorf("postgres exited during startup (%v); its log:\n%s", p.Err(), s.Log())
		default:
		}
		if time.Now().After(deadline) {
			_ = s.Stop()
			return fmt.Errorf("postgres did not accept connections within 30s (last error: %v); its log:\n%s", err, s.Log())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// PID returns the process id of the server's postmaster (the parent of its
// backends), 0 when it is not running.
func (s *Server) PID() int {
	if s.proc == nil {
		return 0
	}
	return s.proc.Pid()
}

// Log returns the server's log so far.
func (s *Server) Log() string {
	b, _ := os.ReadFile(s.logFile)
	return string(b)
}

// URL returns a postgres:// URL for the superuser and the database.
func (s *Server) URL(database string) string {
	return s.URLAs(Superuser, s.Password, database)
}

// URLAs returns a postgres:// URL for a user, password and database.
func (s *Server) URLAs(user, password, database string) string {
	u := url.URL{Scheme: "postgres", User: url.UserPassword(user, password),
		Host: net.JoinHostPort(s.Host, strconv.Itoa(s.Port)), Path: "/" + database, RawQuery: "sslmode=disable"}
	return u.String()
}

// Exec runs SQL statements as the superuser in a database.
func (s *Server) Exec(ctx context.Context, database string, sql ...string) error {
	conn, err := pgx.Connect(ctx, s.URL(database))
	if err != nil {
		return fmt.Errorf("connecting to database %s: %w", database, err)
	}
	defer conn.Close(context.Background())
	for _, q := range sql {
		if _, err := conn.Exec(ctx, q); err != nil {
			return fmt.Errorf("%s: %w", q, err)
		}
	}
	return nil
}

// NewDatabase creates a fresh database named after prefix and returns its
// name; it is dropped by DropDatabase or with the server.
func (s *Server) NewDatabase(ctx context.Context, prefix string) (string, error) {
	name := dbtest.DatabaseName(prefix, s.dbs.Add(1))
	if err := s.Exec(ctx, "postgres", "CREATE DATABASE "+pgx.Identifier{name}.Sanitize()); err != nil {
		return "", err
	}
	return name, nil
}

// DropDatabase drops a database, closing its connections.
func (s *Server) DropDatabase(ctx context.Context, name string) error {
	return s.Exec(ctx, "postgres", "DROP DATABASE IF EXISTS "+pgx.Identifier{name}.Sanitize()+" WITH (FORCE)")
}

// CreateDatabase creates a database for the test, dropped at its end, and
// returns the superuser URL to it.
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
	return s.URL(name)
}

// Stop shuts the server down (fast shutdown, then kill) and removes its
// data folder.
func (s *Server) Stop() error {
	var err error
	s.stop.Do(func() {
		if s.proc != nil {
			if stopErr := s.proc.Stop(syscall.SIGINT, 10*time.Second); stopErr != nil {
				err = fmt.Errorf("postgres %w", stopErr)
			}
		}
		if rmErr := os.RemoveAll(filepath.Dir(s.Dir)); rmErr != nil && err == nil {
			err = rmErr
		}
	})
	return err
}

// credential returns the identity to run the server as: conveyor-pg
// (created when missing) for root, nil (the caller) otherwise.
func credential() (*syscall.Credential, error) {
	return proc.UnprivilegedUser(User, "PostgreSQL refuses to run as root; hack/postgres.sh creates it")
}

// ExecURL runs SQL statements on the database at url, failing the test on
// the first error.
func ExecURL(t testing.TB, url string, sql ...string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatalf("connecting: %v", err)
	}
	defer conn.Close(context.Background())
	for _, q := range sql {
		if _, err := conn.Exec(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
}

// QueryString runs a query on the database at url and returns the first
// column of its first row, scanned as text.
func QueryString(t testing.TB, url, sql string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatalf("connecting: %v", err)
	}
	defer conn.Close(context.Background())
	var out string
	if err := conn.QueryRow(ctx, sql).Scan(&out); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	return out
}

// DatabaseName returns the database a postgres:// URL points at.
func DatabaseName(rawURL string) string {
	u, err := url.Parse(rawURL)
	if err != nil {
		return ""
	}
	return strings.TrimPrefix(u.Path, "/")
}
