package release

import (
	"bytes"
	"crypto/sha256"
	"debug/buildinfo"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"runtime/debug"
	"slices"
	"sort"
	"strings"

	cdx "github.com/CycloneDX/cyclonedx-go"
)

// SBOMName is the file name of a release's SBOM.
func SBOMName(version string) string { return "ate-orchestrator-" + version + ".sbom.cdx.json" }

// Binary is one built program and what the go command recorded in it.
type Binary struct {
	Platform Platform
	Name     string
	SHA256   string // hex, of the file
	Info     *buildinfo.BuildInfo
}

// ReadBinaries reads the build info and the digest of each program built
// into dir for p.
func ReadBinaries(dir string, p Platform) ([]Binary, error) {
	var bs []Binary
	for _, name := range Programs {
		path := filepath.Join(dir, name)
		bi, err := buildinfo.ReadFile(path)
		if err != nil {
			return nil, fmt.Errorf("reading the build info of %s (%s): %w", name, p, err)
		}
		sum, err := fileSHA256(path)
		if err != nil {
			return nil, err
		}
		bs = append(bs, Binary{Platform: p, Name: name, SHA256: sum, Info: bi})
	}
	return bs, nil
}

func fileSHA256(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", fmt.Errorf("opening %s: %w", path, err)
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", fmt.Errorf("hashing %s: %w", path, err)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// GoPURL is the package URL of a Go module version (purl type golang):
// each path segment and the version percent-encoded, case kept, as module
// paths are case-sensitive.
func GoPURL(path, version string) string {
	segs := strings.Split(path, "/")
	for i, s := range segs {
		segs[i] = purlEscape(s)
	}
	u := "pkg:golang/" + strings.Join(segs, "/")
	if version != "" {
		u += "@" + purlEscape(version)
	}
	return u
}

// purlEscape percent-encodes all but the characters that a purl component
// may hold as they are (RFC 3986 unreserved).
func purlEscape(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '.' || c == '_' || c == '~' {
			b.WriteByte(c)
		} else {
			fmt.Fprintf(&b, "%%%02X", c)
		}
	}
	return b.String()
}

// SumSHA256 turns a go.sum hash ("h1:" and base64 SHA-256 of the module's
// file list, golang.org/x/mod/sumdb/dirhash) into the hex that CycloneDX
// hashes take.
func SumSHA256(sum string) (string, error) {
	b64, ok := strings.CutPrefix(sum, "h1:")
	if !ok {
		return "", fmt.Errorf("module sum %q is not an h1: hash", sum)
	}
	b, err := base64.StdEncoding.DecodeString(b64)
	if err != nil || len(b) != sha256.Size {
		return "", fmt.Errorf("module sum %q is not a base64 SHA-256", sum)
	}
	return hex.EncodeToString(b), nil
}

// SBOMInput is what the SBOM describes: the image, by its index digest,
// and the binaries of every platform.
type SBOMInput struct {
	Metadata
	Image       string // repository
	IndexDigest string // sha256:...
	Binaries    []Binary
	// CABundle is the module the image's CA roots come from.
	CABundle debug.Module
}

// Property names of this SBOM, in the cdx: style of cyclonedx-gomod where
// one exists.
const (
	propGOOS       = "cdx:gomod:build:env:GOOS"
	propGOARCH     = "cdx:gomod:build:env:GOARCH"
	propGoVersion  = "cdx:gomod:build:goversion"
	propPath       = "ate:image:path"
	propModuleSum  = "cdx:gomod:module:sum"
	propBuildFlags = "cdx:gomod:build:setting:"
)

// SBOM is the CycloneDX BOM of the image: the image as the BOM's subject,
// one component for each binary of each platform (with its hash and build
// settings), one for each Go module linked into any of them (version, purl
// and the module's go.sum hash), the Go standard library as a module of the
// Go version, and the module the CA roots come from; the dependencies say
// which binary links which module. Everything is sorted and the serial
// number derived from the index digest, so that one image has one SBOM.
func SBOM(in SBOMInput) (*cdx.BOM, error) {
	digest, ok := strings.CutPrefix(in.IndexDigest, "sha256:")
	if !ok {
		return nil, fmt.Errorf("index digest %q is not sha256:", in.IndexDigest)
	}
	bom := cdx.NewBOM()
	bom.SerialNumber = "urn:uuid:" + uuidFromHex(digest)
	bom.Version = 1
	imageRef := "image"
	name := in.Image[strings.LastIndex(in.Image, "/")+1:]
	bom.Metadata = &cdx.Metadata{
		Timestamp: in.Created.UTC().Format("2006-01-02T15:04:05Z"),
		Tools: &cdx.ToolsChoice{Components: &[]cdx.Component{{
			Type: cdx.ComponentTypeApplication, Name: "ate-orchestrator hack/release",
			Description: "reads the Go build info of each binary (debug/buildinfo) with github.com/CycloneDX/cyclonedx-go",
		}}},
		Component: &cdx.Component{
			BOMRef:  imageRef,
			Type:    cdx.ComponentTypeContainer,
			Name:    in.Image,
			Version: in.Version,
			// purl type oci: the digest is the version, the repository a qualifier.
			PackageURL: "pkg:oci/" + purlEscape(name) + "@sha256%3A" + digest + "?repository_url=" + purlEscape(in.Image) + "&tag=" + purlEscape(in.Version),
			Hashes:     &[]cdx.Hash{{Algorithm: cdx.HashAlgoSHA256, Value: digest}},
			Licenses:   licenses(),
			Properties: &[]cdx.Property{
				{Name: AnnotationRevision, Value: in.Revision},
				{Name: AnnotationSource, Value: in.Source},
			},
		},
	}

	modules := map[string]debug.Module{} // by purl
	deps := map[string][]string{}        // bom-ref → purls
	var binaries []cdx.Component
	addModule := func(m *debug.Module) (string, error) {
		if m.Replace != nil {
			m = m.Replace
		}
		purl := GoPURL(m.Path, m.Version)
		if old, ok := modules[purl]; ok && old.Sum != m.Sum {
			return "", fmt.Errorf("module %s@%s has two sums: %s and %s", m.Path, m.Version, old.Sum, m.Sum)
		}
		modules[purl] = *m
		return purl, nil
	}
	for _, b := range in.Binaries {
		ref := b.Platform.String() + "/" + b.Name
		std := GoPURL("std", b.Info.GoVersion)
		modules[std] = debug.Module{Path: "std", Version: b.Info.GoVersion}
		uses := []string{std}
		for _, m := range b.Info.Deps {
			purl, err := addModule(m)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", ref, err)
			}
			uses = append(uses, purl)
		}
		sort.Strings(uses)
		deps[ref] = uses
		props := []cdx.Property{
			{Name: propGOOS, Value: b.Platform.OS},
			{Name: propGOARCH, Value: b.Platform.Arch},
			{Name: propGoVersion, Value: b.Info.GoVersion},
			{Name: propPath, Value: BinDir + "/" + b.Name},
		}
		for _, s := range b.Info.Settings {
			props = append(props, cdx.Property{Name: propBuildFlags + s.Key, Value: s.Value})
		}
		binaries = append(binaries, cdx.Component{
			BOMRef:     ref,
			Type:       cdx.ComponentTypeApplication,
			Name:       b.Name,
			Version:    in.Version,
			Group:      b.Info.Main.Path,
			Hashes:     &[]cdx.Hash{{Algorithm: cdx.HashAlgoSHA256, Value: b.SHA256}},
			Licenses:   licenses(),
			Properties: &props,
		})
	}
	imageUses := make([]string, 0, len(binaries)+1)
	for _, b := range binaries {
		imageUses = append(imageUses, b.BOMRef)
	}
	caPURL, err := addModule(&in.CABundle)
	if err != nil {
		return nil, fmt.Errorf("CA roots: %w", err)
	}
	imageUses = append(imageUses, caPURL)
	sort.Strings(imageUses)

	components := binaries
	for _, purl := range slices.Sorted(maps.Keys(modules)) {
		m := modules[purl]
		c := cdx.Component{BOMRef: purl, Type: cdx.ComponentTypeLibrary, Name: m.Path, Version: m.Version, PackageURL: purl}
		if m.Sum != "" {
			hex, err := SumSHA256(m.Sum)
			if err != nil {
				return nil, fmt.Errorf("module %s: %w", m.Path, err)
			}
			c.Hashes = &[]cdx.Hash{{Algorithm: cdx.HashAlgoSHA256, Value: hex}}
			c.Properties = &[]cdx.Property{{Name: propModuleSum, Value: m.Sum}}
		}
		if m.Path == CABundleModule {
			c.Description = "the image's CA roots, " + CABundlePath
		}
		components = append(components, c)
	}
	bom.Components = &components

	dependencies := []cdx.Dependency{{Ref: imageRef, Dependencies: &imageUses}}
	for _, b := range binaries {
		uses := deps[b.BOMRef]
		dependencies = append(dependencies, cdx.Dependency{Ref: b.BOMRef, Dependencies: &uses})
	}
	bom.Dependencies = &dependencies
	return bom, nil
}

// licenses is the license of the image and of its binaries, the
// orchestrator's own; the modules' licenses are their own (the module
// proxy's zips hold them), not asserted here.
func licenses() *cdx.Licenses {
	return &cdx.Licenses{{License: &cdx.License{ID: License}}}
}

// uuidFromHex shapes the first 128 bits of a hex digest as a UUID (version
// 8, custom), so that the same image gets the same serial number.
func uuidFromHex(h string) string {
	b, _ := hex.DecodeString(h[:32])
	b[6] = b[6]&0x0f | 0x80
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}

// WriteSBOM writes bom as CycloneDX 1.6 JSON.
func WriteSBOM(bom *cdx.BOM, path string) error {
	var b bytes.Buffer
	if err := cdx.NewBOMEncoder(&b, cdx.BOMFileFormatJSON).SetPretty(true).EncodeVersion(bom, cdx.SpecVersion1_6); err != nil {
		return fmt.Errorf("encoding the SBOM %s: %w", path, err)
	}
	return os.WriteFile(path, b.Bytes(), 0o644)
}
