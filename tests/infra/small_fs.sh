#!/usr/bin/env bash
# A small, size-limited work directory: a tmpfs of a given size that a user owns, for the tests of a full
# work directory (no space left: ENOSPC, as a project's quota or a full scratch file system answers).
#
#   tests/infra/small_fs.sh mount DIR SIZE [OWNER]   mount a tmpfs of SIZE (e.g. 4m) on DIR (created), owned by
#                                                    OWNER (default: $HLM_TEST_USER), mode 0700
#   tests/infra/small_fs.sh fill DIR [LEAVE]         write DIR/.ballast until only LEAVE bytes (default 0) are free
#   tests/infra/small_fs.sh free DIR                 remove DIR/.ballast
#   tests/infra/small_fs.sh umount DIR               unmount it (lazily: a job may still hold a file open)
#   tests/infra/small_fs.sh avail DIR                print the bytes free on DIR's file system
#
# Must run as root (mount); fill and free write as root, so that the ballast counts for every user.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=env.sh
source "$here/env.sh"

avail() { df -B1 --output=avail "$1" | tail -n 1 | tr -d ' '; }

case "${1:-}" in
    mount)
        dir=$2 size=$3 owner=${4:-$HLM_TEST_USER}
        mkdir -p "$dir"
        mount -t tmpfs -o "size=$size,mode=0700,uid=$(id -u "$owner"),gid=$(id -g "$owner")" hlm-small-fs "$dir"
        ;;
    fill)
        dir=$2 leave=${3:-0}
        free=$(avail "$dir")
        want=$(( free > leave ? free - leave : 0 ))
        # a tmpfs counts whole pages: the ballast is written in pages, and what is left is rounded down to them
        head -c "$want" /dev/zero >> "$dir/.ballast" 2>/dev/null || true
        sync "$dir/.ballast" 2>/dev/null || true
        ;;
    free)
        rm -f "$2/.ballast"
        ;;
    umount)
        umount -l "$2"
        rmdir "$2" 2>/dev/null || true
        ;;
    avail)
        avail "$2"
        ;;
    *)
        echo "usage: $0 mount DIR SIZE [OWNER] | fill DIR [LEAVE] | free DIR | umount DIR | avail DIR" >&2
        exit 2
        ;;
esac
