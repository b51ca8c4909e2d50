package main

import (
	"archive/tar"
	"compress/gzip"
	"os"
)

// writeArchive writes path, a tar.gz holding bin as ./tagsync (mode 0755,
// root-owned, the commit time), the layout the krew manifest expects.
func (b *build) writeArchive(path, bin string) (err error) {
	content, err := os.ReadFile(bin)
	if err != nil {
		return err
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	defer func() {
		if cerr := f.Close(); err == nil {
			err = cerr
		}
	}()
	gz, err := gzip.NewWriterLevel(f, gzip.BestCompression)
	if err != nil {
		return err
	}
	gz.ModTime = b.date()
	tw := tar.NewWriter(gz)
	hdr := &tar.Header{Typeflag: tar.TypeReg, Name: "tagsync", Mode: 0o755, Size: int64(len(content)), ModTime: b.date()}
	if err := tw.WriteHeader(hdr); err != nil {
		return err
	}
	if _, err := tw.Write(content); err != nil {
		return err
	}
	if err := tw.Close(); err != nil {
		return err
	}
	return gz.Close()
}
