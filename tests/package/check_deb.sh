#!/usr/bin/env bash
# The Debian package (cmake/Packaging.cmake): builds it with cpack in the build
# dir, extracts it and runs both programs from the extracted tree, checks the
# man pages, completion, desktop entry and AppStream file, and runs lintian,
# failing on its errors only. Exit 77 (skip) only where a tool is missing.
# usage: check_deb.sh BUILD_DIR
set -euo pipefail

build=$1
for tool in cpack dpkg-deb dpkg-shlibdeps help2man desktop-file-validate lintian; do
  if ! command -v "$tool" >/dev/null 2>&1; then
    echo "SKIP: $tool is missing (scripts/lib/deps.sh installs it)"
    exit 77
  fi
done

fail() {
  echo "FAIL: $*" >&2
  exit 1
}

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# Its own output folder, so no older .deb is taken for this one.
(cd "$build" && cpack -G DEB -B "$tmp/out" >"$tmp/cpack.log" 2>&1) || { cat "$tmp/cpack.log" >&2; fail "cpack -G DEB"; }
debs=("$tmp"/out/shardscope_*_amd64.deb)
[[ -f ${debs[0]} && ${#debs[@]} == 1 ]] || fail "cpack wrote no single shardscope_<version>_amd64.deb: $(ls "$tmp/out")"
deb=${debs[0]}
echo "package: $(basename "$deb")"

depends=$(dpkg-deb -f "$deb" Depends)
[[ $depends == *libqt6widgets6* && $depends == *libc6* ]] || fail "Depends lacks the shared libraries (dpkg-shlibdeps): '$depends'"

root=$tmp/root
dpkg-deb -x "$deb" "$root"
version=$("$root/usr/bin/shardscope-cli" --version) || fail "extracted shardscope-cli --version"
[[ $version == "shardscope-cli $(dpkg-deb -f "$deb" Version)" ]] || fail "--version says '$version'"
help=$(QT_QPA_PLATFORM=offscreen "$root/usr/bin/shardscope" --help) || fail "extracted shardscope --help"
[[ $help == *--preset* ]] || fail "shardscope --help does not list --preset"
# The installed CLI loads the CUDA backend installed beside it, where the build has one.
if [[ -f $build/app/libshardscope-cuda.so ]]; then
  [[ -f $root/usr/lib/shardscope/backends/libshardscope-cuda.so ]] || fail "usr/lib/shardscope/backends/libshardscope-cuda.so missing from the package"
  devices=$("$root/usr/bin/shardscope-cli" devices) || fail "extracted shardscope-cli devices"
  [[ $devices == "CUDA runtime "* ]] || fail "the installed CLI did not load its CUDA backend: $devices"
fi
# The installed program finds the profiles installed beside it.
profiles=$("$root/usr/bin/shardscope-cli" profiles) || fail "extracted shardscope-cli profiles"
[[ $profiles == *h100-sxm* && $profiles == *"$root/usr/share/shardscope/profiles"* ]] ||
  fail "shardscope-cli profiles does not read the installed profiles: $profiles"
# validate reads the table installed beside the profiles.
validated=$("$root/usr/bin/shardscope-cli" validate) || fail "extracted shardscope-cli validate"
[[ $validated == *"$root/usr/share/shardscope/validation/published.json"* ]] ||
  fail "shardscope-cli validate does not read the installed table: $validated"

for f in usr/share/man/man1/shardscope.1.gz usr/share/man/man1/shardscope-cli.1.gz \
  usr/share/bash-completion/completions/shardscope-cli usr/share/applications/shardscope.desktop \
  usr/share/icons/hicolor/scalable/apps/shardscope.svg usr/share/metainfo/io.github.shardscope.metainfo.xml \
  usr/share/doc/shardscope/copyright usr/share/doc/shardscope/changelog.gz; do
  [[ -s $root/$f ]] || fail "$f missing from the package"
done
zcat "$root/usr/share/man/man1/shardscope-cli.1.gz" | grep -q 'calc' || fail "shardscope-cli.1 lacks the commands"
# The completion offers the settings table's flags and choices.
completion=$root/usr/share/bash-completion/completions/shardscope-cli
grep -q -- '--strategy) COMPREPLY=.*zero3' "$completion" || fail "completion lacks --strategy's choices"
bash -n "$completion" || fail "completion is not valid bash"
desktop-file-validate "$root/usr/share/applications/shardscope.desktop" || fail "desktop-file-validate"
if command -v appstreamcli >/dev/null 2>&1; then
  appstreamcli validate --no-net --explain "$root/usr/share/metainfo/io.github.shardscope.metainfo.xml" ||
    fail "appstreamcli validate"
fi

# lintian: errors fail, warnings are listed.
lintian --tag-display-limit 0 "$deb" >"$tmp/lintian.log" 2>&1 || true
cat "$tmp/lintian.log"
if grep -q '^E:' "$tmp/lintian.log"; then fail "lintian reports errors"; fi
echo "ok: $(basename "$deb") builds, installs its files and runs"
