package release

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// ChecksumsName is the checksum file of a release, in sha256sum's format
// (`sha256sum -c SHA256SUMS` in the release directory checks it).
const ChecksumsName = "SHA256SUMS"

// WriteChecksums writes dir/SHA256SUMS for the named files of dir, sorted by
// name: "<hex>  <name>" per line, sha256sum's text-mode format.
func WriteChecksums(dir string, names []string) error {
	names = append([]string(nil), names...)
	sort.Strings(names)
	var b bytes.Buffer
	for _, n := range names {
		if n != filepath.Base(n) || n == ChecksumsName {
			return fmt.Errorf("checksums: %q is not an artifact's file name", n)
		}
		sum, err := fileSHA256(filepath.Join(dir, n))
		if err != nil {
			return fmt.Errorf("checksum of %s: %w", n, err)
		}
		fmt.Fprintf(&b, "%s  %s\n", sum, n)
	}
	if err := os.WriteFile(filepath.Join(dir, ChecksumsName), b.Bytes(), 0o644); err != nil {
		return fmt.Errorf("writing %s: %w", ChecksumsName, err)
	}
	return nil
}

// ParseChecksums reads a sha256sum file into name → hex digest.
func ParseChecksums(b []byte) (map[string]string, error) {
	sums := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		sum, name, ok := strings.Cut(line, "  ")
		if !ok {
			// "*" marks sha256sum's binary mode: the same digest.
			sum, name, ok = strings.Cut(line, " *")
		}
		if !ok || len(sum) != 64 || strings.Trim(sum, "0123456789abcdef") != "" || name == "" {
			return nil, fmt.Errorf("line %d of the checksums is not \"<sha256 hex>  <name>\": %q", n, line)
		}
		if _, dup := sums[name]; dup {
			return nil, fmt.Errorf("line %d: %s is listed twice", n, name)
		}
		sums[name] = sum
	}
	return sums, sc.Err()
}

// VerifyChecksums checks every file that dir/SHA256SUMS lists, and that it
// lists every other file of dir, as `sha256sum -c` would and more.
func VerifyChecksums(dir string) error {
	b, err := os.ReadFile(filepath.Join(dir, ChecksumsName))
	if err != nil {
		return fmt.Errorf("reading %s: %w", ChecksumsName, err)
	}
	sums, err := ParseChecksums(b)
	if err != nil {
		return err
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("listing %s: %w", dir, err)
	}
	for _, e := range entries {
		if e.Name() != ChecksumsName {
			if _, ok := sums[e.Name()]; !ok {
				return fmt.Errorf("%s does not list %s", ChecksumsName, e.Name())
			}
		}
	}
	for name, want := range sums {
		got, err := fileSHA256(filepath.Join(dir, name))
		if err != nil {
			return fmt.Errorf("checking %s: %w", name, err)
		}
		if got != want {
			return fmt.Errorf("%s: sha256 %s, %s says %s", name, got, ChecksumsName, want)
		}
	}
	return nil
}
