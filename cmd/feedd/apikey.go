package main

import (
	"context"
	"fmt"
	"io"
	"text/tabwriter"
	"time"
)

// runAPIKey is feedd apikey: the keys of the server API (docs/integrating.md,
// "API keys"), on the store the flags of feedd serve name.
//
//	feedd apikey create NAME [flags]   make a key; print it, once
//	feedd apikey list [flags]          list the keys (never the keys themselves)
//	feedd apikey revoke NAME [flags]   revoke the live key named NAME
func runAPIKey(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	const how = "usage: feedd apikey create NAME | list | revoke NAME [flags]"
	if len(args) == 0 {
		return fmt.Errorf("%s", how)
	}
	action, args := args[0], args[1:]
	var name string
	switch action {
	case "create", "revoke":
		if len(args) == 0 || len(args[0]) == 0 || args[0][0] == '-' {
			return fmt.Errorf("feedd apikey %s needs the key's NAME (%s)", action, how)
		}
		name, args = args[0], args[1:]
	case "list":
	default:
		return fmt.Errorf("unknown action %q (%s)", action, how)
	}
	c, err := parseConfig("apikey", args, getenv, stderr)
	if err != nil || c == nil {
		return err
	}
	log, err := newLogger(c, stderr)
	if err != nil {
		return err
	}
	a, err := openApp(ctx, c, log)
	if err != nil {
		return err
	}
	defer a.close()
	switch action {
	case "create":
		key, k, err := a.service.CreateAPIKey(ctx, name)
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "%s\n", key)
		fmt.Fprintf(stderr, "API key %q made (id %d). It is shown this once: feedd keeps only its hash.\n", k.Name, k.ID)
	case "revoke":
		if err := a.service.RevokeAPIKey(ctx, name); err != nil {
			return err
		}
		fmt.Fprintf(stderr, "API key %q revoked: requests with it are refused from now on.\n", name)
	case "list":
		keys, err := a.service.ListAPIKeys(ctx)
		if err != nil {
			return err
		}
		tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "ID\tNAME\tCREATED\tLAST USED\tREVOKED")
		when := func(t time.Time) string {
			if t.IsZero() {
				return "-"
			}
			return t.UTC().Format(time.RFC3339)
		}
		for _, k := range keys {
			fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\n", k.ID, k.Name, when(k.CreatedAt), when(k.UsedAt), when(k.RevokedAt))
		}
		return tw.Flush()
	}
	return nil
}
