package main

import (
	"bufio"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// unitFile is a systemd unit's [Service] settings, in order (a key may
// repeat).
type unitFile struct {
	path     string
	text     string
	settings [][2]string
}

func readUnit(t *testing.T, path string) unitFile {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	u := unitFile{path: path, text: string(b)}
	section := ""
	sc := bufio.NewScanner(strings.NewReader(u.text))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		switch {
		case line == "" || line[0] == '#':
		case line[0] == '[':
			section = line
		case section == "[Service]":
			k, v, _ := strings.Cut(line, "=")
			u.settings = append(u.settings, [2]string{k, v})
		}
	}
	return u
}

func (u unitFile) all(key string) []string {
	var out []string
	for _, kv := range u.settings {
		if kv[0] == key {
			out = append(out, kv[1])
		}
	}
	return out
}

// readEnvFile reads a systemd EnvironmentFile of KEY=VALUE lines.
func readEnvFile(t *testing.T, path string, into map[string]string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || line[0] == '#' {
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		if !ok {
			t.Fatalf("%s: not KEY=VALUE: %q", path, line)
		}
		into[k] = v
	}
}

// TestDeployUnits: the systemd units in deploy/ pass systemd-analyze
// verify and its offline security review (exposure at most 2.0, "OK"), and
// feedd accepts the command line each one starts, with deploy/feedd.env
// and the unit's own environment, its secret files in place of the
// credentials systemd hands over: the units start what docs/deploy.md
// says, as written.
func TestDeployUnits(t *testing.T) {
	t.Parallel()
	analyze, err := exec.LookPath("systemd-analyze")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("systemd-analyze not found (scripts/test.sh installs the systemd package)")
		}
		t.Skip("systemd-analyze not found (scripts/test.sh installs the systemd package)")
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	creds, state, copies := t.TempDir(), t.TempDir(), t.TempDir()
	for _, name := range []string{"secret", "code-webhook-secret"} {
		if err := os.WriteFile(filepath.Join(creds, name), []byte(strings.Repeat("k", 64)+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	for _, name := range []string{"feedd.service", "feedd-worker.service"} {
		t.Run(name, func(t *testing.T) {
			u := readUnit(t, filepath.Join("../../deploy", name))
			for _, want := range []string{"DynamicUser=yes", "StateDirectory=feedd", "Restart=on-failure", "NoNewPrivileges=yes",
				"ProtectSystem=strict", "PrivateTmp=yes", "ProtectHome=yes", "CapabilityBoundingSet=", "MemoryDenyWriteExecute=yes",
				"EnvironmentFile=/etc/feedd/feedd.env", "SystemCallFilter=@system-service"} {
				k, v, _ := strings.Cut(want, "=")
				found := false
				for _, got := range u.all(k) {
					found = found || got == v
				}
				if !found {
					t.Errorf("%s has no %s", name, want)
				}
			}

			// The command line, as feedd parses it.
			starts := u.all("ExecStart")
			if len(starts) != 1 {
				t.Fatalf("%s: ExecStart %q, want one", name, starts)
			}
			args := strings.Fields(starts[0])
			if args[0] != "/usr/local/bin/feedd" || len(args) < 2 {
				t.Fatalf("%s starts %q, want /usr/local/bin/feedd CMD ...", name, starts[0])
			}
			vars := map[string]string{}
			readEnvFile(t, "../../deploy/feedd.env", vars)
			for _, env := range u.all("Environment") {
				for _, kv := range strings.Fields(env) {
					k, v, _ := strings.Cut(kv, "=")
					vars[k] = strings.NewReplacer("%d", creds, "%S", state).Replace(v)
				}
			}
			for _, cred := range u.all("LoadCredential") {
				id, src, _ := strings.Cut(cred, ":")
				if !strings.HasPrefix(src, "/etc/feedd/") {
					t.Errorf("%s: credential %s from %s, want a file under /etc/feedd", name, id, src)
				}
				if _, err := os.Stat(filepath.Join(creds, id)); err != nil {
					t.Errorf("%s: credential %s is not one of feedd's secret files", name, id)
				}
			}
			if _, err := parseConfig(args[1], args[2:], func(k string) string { return vars[k] }, io.Discard); err != nil {
				t.Errorf("%s: feedd refuses %q with deploy/feedd.env: %v", name, starts[0], err)
			}

			// systemd's own checks, on a copy that starts an executable
			// that exists here.
			copy := filepath.Join(copies, name)
			if err := os.WriteFile(copy, []byte(strings.ReplaceAll(u.text, "/usr/local/bin/feedd", self)), 0o644); err != nil {
				t.Fatal(err)
			}
			if out, err := exec.Command(analyze, "verify", "--man=no", copy).CombinedOutput(); err != nil || len(out) > 0 {
				t.Errorf("systemd-analyze verify %s: %v\n%s", name, err, out)
			}
			out, err := exec.Command(analyze, "security", "--offline=true", copy).CombinedOutput()
			m := regexp.MustCompile(`Overall exposure level for \S+: ([0-9.]+) (\S+)`).FindSubmatch(out)
			if m == nil {
				t.Fatalf("systemd-analyze security %s: %v\n%s", name, err, out)
			}
			if level, _ := strconv.ParseFloat(string(m[1]), 64); level > 2.0 || string(m[2]) != "OK" {
				t.Errorf("systemd-analyze security %s: exposure %s %s, want at most 2.0 OK\n%s", name, m[1], m[2], out)
			}
			t.Logf("systemd-analyze verify: no complaint; security: exposure %s %s", m[1], m[2])
		})
	}
}

// TestDockerfile: deploy/Dockerfile starts from nothing (no base image to
// fetch) and copies only what scripts/release.sh puts in its context.
func TestDockerfile(t *testing.T) {
	b, err := os.ReadFile("../../deploy/Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	var from []string
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) == 0 || strings.HasPrefix(f[0], "#") {
			continue
		}
		switch strings.ToUpper(f[0]) {
		case "FROM":
			from = append(from, strings.Join(f[1:], " "))
		case "COPY", "ADD":
			src := f[len(f)-2]
			if src != "feedd" && src != "ca-certificates.crt" && src != "data" {
				t.Errorf("deploy/Dockerfile copies %q, which scripts/release.sh does not put in the context", src)
			}
		case "RUN":
			t.Errorf("deploy/Dockerfile runs %q: a scratch image has no shell", line)
		}
	}
	if len(from) != 1 || from[0] != "scratch" {
		t.Errorf("deploy/Dockerfile is FROM %q, want scratch alone", from)
	}
	rel, err := os.ReadFile("../../scripts/release.sh")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`cp "$out/$name" "$ctx/feedd"`, `"$ctx/ca-certificates.crt"`, `mkdir -p "$ctx/data"`} {
		if !strings.Contains(string(rel), want) {
			t.Errorf("scripts/release.sh no longer lays out the image's context: no %s", want)
		}
	}
}
