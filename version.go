package feed

import (
	"fmt"
	"slices"
	"strings"
)

// Release is the version of feedd this source is. At a release's commit it
// is that release, and CHANGELOG.md's newest section names it; between
// releases it is the next release with the suffix "-dev", and CHANGELOG.md
// gathers the changes under "Unreleased" (CONTRIBUTING.md, "Cutting a
// release"). scripts/release.sh builds only a release's commit.
//
// The stores record it with every migration they apply, so that a database
// upgraded by a newer feedd names that feedd when an older one refuses it
// (NewerSchemaError).
const Release = "0.3.0-dev"

// NewerSchemaError is the refusal of a database that a newer feedd
// migrated: it holds migrations this feedd does not know, so this feedd
// could misread what the newer one wrote. The stores return it at Open
// before they change anything.
type NewerSchemaError struct {
	// File names the database: "feedd.db", "inbox.db" or "the database".
	File string
	// Releases are the releases that applied the unknown migrations, as
	// they recorded themselves.
	Releases []string
	// Migrations are the unknown migrations' names.
	Migrations []string
}

func (e *NewerSchemaError) Error() string {
	rs := slices.Clone(e.Releases)
	slices.Sort(rs)
	rs = slices.Compact(rs)
	return fmt.Sprintf("%s was upgraded by feedd %s, newer than this feedd (%s): it has the migrations %s, which this feedd does not know. "+
		"Run that feedd (or a later one), or restore the backup taken before the upgrade (docs/operations.md, \"Upgrading\")",
		e.File, strings.Join(rs, ", "), Release, strings.Join(e.Migrations, ", "))
}

// OlderRefusal is the sentence a feedd older than 0.2.0 stops with at start
// on a database that this or a later feedd has opened. feedd 0.1.0 reads
// its record of migrations from feedd_migrations; the stores keep theirs
// in feedd_schema_migrations and leave at the old name a view that fails
// with this sentence when read (sqlite/db.go, postgres/db.go).
const OlderRefusal = "this database was upgraded by feedd 0.2.0 or later, and an older feedd cannot run it: " +
	"run the newer feedd, or restore the backup taken before the upgrade"
