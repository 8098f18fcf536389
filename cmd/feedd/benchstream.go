package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"

	"github.com/feedd/feedd/internal/bench"
)

// streamClientsCmd is the hidden benchmark feedd bench stream runs as its
// child: it holds the client ends of the idle streams, so that the
// parent's memory is the server's alone.
const streamClientsCmd = "stream-clients"

// holdStreamClients reads an address and then one token per line from in,
// opens a stream per token, says "ready" on out, and holds them until in
// is closed.
func holdStreamClients(ctx context.Context, in io.Reader, out io.Writer) error {
	bench.RaiseFileLimit()
	sc := bufio.NewScanner(in)
	var addr string
	var tokens []string
	for sc.Scan() {
		line := sc.Text()
		if line == "" {
			break
		}
		if addr == "" {
			addr = line
		} else {
			tokens = append(tokens, line)
		}
	}
	release, err := bench.HoldStreams(ctx, addr, tokens)
	if err != nil {
		return err
	}
	defer release()
	fmt.Fprintln(out, "ready")
	io.Copy(io.Discard, in) // until the parent closes it
	return nil
}

// holdStreamsApart holds the streams in a child feedd process.
func holdStreamsApart(ctx context.Context, addr string, tokens []string) (func(), error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	cmd := exec.CommandContext(ctx, exe, "bench", streamClientsCmd)
	cmd.Stderr = os.Stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	outPipe, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	stop := func() { in.Close(); cmd.Wait() }
	go func() {
		fmt.Fprintf(in, "%s\n%s\n\n", addr, strings.Join(tokens, "\n"))
	}()
	line, err := bufio.NewReader(outPipe).ReadString('\n')
	if err != nil || strings.TrimSpace(line) != "ready" {
		stop()
		return nil, fmt.Errorf("stream clients: %q %v", line, err)
	}
	return stop, nil
}
