package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/feedd/feedd/internal/testimg"
)

// TestImportImages: feedd import hmdp --images copies the pictures the
// notes name from the tutorial's IMAGE_UPLOAD_DIR into feedd's image
// store under their paths, without their metadata, counts the ones it
// cannot bring by reason, and is idempotent; feedd then serves the notes
// with their pictures.
func TestImportImages(t *testing.T) {
	for name, target := range map[string]func(t *testing.T) *importTarget{
		"sqlite":   sqliteTarget,
		"postgres": func(t *testing.T) *importTarget { return postgresTarget(t, false) },
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			src := newHMDPSource(t, true)
			dir := t.TempDir()
			put := func(name string, b []byte) {
				p := filepath.Join(dir, name)
				if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(p, b, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			put("blogs/1/2/photo.jpg", testimg.Photo(400, 300, 6))
			put("blogs/3/4/page.jpg", testimg.HTML)
			put("blogs/5/6/mark.png", testimg.PNG(20, 20, true))
			for i, phone := range []string{"13800000001", "13800000002"} {
				src.exec(t, "INSERT INTO tb_user (id, phone, password, nick_name, create_time, update_time) VALUES (?, ?, 'x', 'n', FROM_UNIXTIME(?), FROM_UNIXTIME(?))", i+1, phone, at(i), at(i))
			}
			post := func(id, author int, images string) {
				src.exec(t, "INSERT INTO tb_blog (id, shop_id, user_id, title, images, content, liked, comments, create_time, update_time) VALUES (?, 1, ?, 't', ?, 'c', 0, 0, FROM_UNIXTIME(?), FROM_UNIXTIME(?))",
					id, author, images, at(id), at(id))
			}
			post(10, 1, "/imgs/blogs/1/2/photo.jpg,/imgs/blogs/1/2/missing.jpg,https://cdn.example/x.png,/imgs/blogs/3/4/page.jpg,/imgs/blogs/5/6/mark.png")
			post(11, 2, "/imgs/blogs/1/2/photo.jpg,/imgs/blogs/../../etc/passwd")
			tg := target(t)
			tg.args = append(tg.args, "--media-dir", t.TempDir()) // the import's and the server's image store
			rep, logs, err := runImportCmd(t, src, tg, "--images", dir)
			if err != nil {
				t.Fatalf("import: %v\n%s", err, logs)
			}
			if got := rep.phases["images"]; got[1] != 2 || got[2] != 2 || got[3] != 3 {
				t.Fatalf("images phase %v (source, read, imported, skipped), want 2 notes read, 2 pictures imported, 3 skipped:\n%s", got, rep.text)
			}
			sk := rep.skipped["images"]
			if sk["image_missing"] != 1 || sk["image_refused"] != 1 || sk["image_shared"] != 1 {
				t.Fatalf("images skipped %v:\n%s", sk, rep.text)
			}
			// Again: nothing new.
			rep, logs, err = runImportCmd(t, src, tg, "--images", dir)
			if err != nil {
				t.Fatalf("import again: %v\n%s", err, logs)
			}
			if n := tg.count(t, "SELECT count(*) FROM media"); n != 2 {
				t.Fatalf("%d media after a second import, want 2", n)
			}

			s := startServer(t, tg.args...)
			c := newV1Client(t, s)
			a := c.login("13800000001")
			wantImage(t, s.base, "/imgs/blogs/1/2/photo.jpg", "image/jpeg")
			wantImage(t, s.base, "/imgs/blogs/5/6/mark.png", "image/png")
			wantGone(t, s.base, "/imgs/blogs/3/4/page.jpg")
			var p apiPost
			c.want(200, "GET", "/v1/posts/{id}", a, nil, &p, 10)
			if len(p.Media) != 2 || p.Media[0].URL != "/imgs/blogs/1/2/photo.jpg" || p.Media[0].Width != 300 || p.Media[1].ContentType != "image/png" || len(p.Images) != 5 {
				t.Fatalf("imported note: media %+v images %v", p.Media, p.Images)
			}
			var b blog
			s.must("GET", "/blog/11", a, nil, &b)
			if b.Images == nil || *b.Images != "/imgs/blogs/1/2/photo.jpg,/imgs/blogs/../../etc/passwd" {
				t.Fatalf("the other note's images: %v", b.Images)
			}
		})
	}
}
