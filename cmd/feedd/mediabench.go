package main

import (
	"flag"

	"github.com/feedd/feedd/internal/bench"
)

// declareMediaBenchFlags declares the flags of `feedd bench media`,
// defaulting to bench.DefaultMediaOptions.
func declareMediaBenchFlags(fs *flag.FlagSet, o *bench.MediaOptions) {
	d := bench.DefaultMediaOptions()
	fs.IntVar(&o.Uploads, "media-uploads", d.Uploads, "media: uploads of the photo")
	fs.IntVar(&o.Concurrency, "media-concurrency", d.Concurrency, "media: uploads of the photo in flight at once")
	fs.Float64Var(&o.PhotoMP, "media-photo-mp", d.PhotoMP, "media: megapixels of the photo")
	fs.IntVar(&o.BigClients, "media-big-clients", d.BigClients, "media: clients uploading a big image at once, for the peak memory")
	fs.IntVar(&o.BigRounds, "media-big-rounds", d.BigRounds, "media: rounds of the big uploads (the peak of each is reported)")
	fs.Float64Var(&o.BigMP, "media-big-mp", d.BigMP, "media: megapixels of the big image")
	fs.IntVar(&o.Previews, "media-previews", d.Previews, "media: images whose previews are read")
	fs.IntVar(&o.ReadConcurrency, "media-read-concurrency", d.ReadConcurrency, "media: preview reads in flight at once")
	fs.StringVar(&o.Nginx, "media-nginx", "nginx", "media: nginx binary serving the same preview files, started on loopback (empty: no comparison; none with --media-s3)")
}
