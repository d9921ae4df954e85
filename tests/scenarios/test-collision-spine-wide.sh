#!/usr/bin/env bash
# test-collision-spine.sh on a wider fabric than its own: 7 hosts x 2 rails
# on 3 leaves (3, 2 and 2 hosts) and 3 spines. Job A on n1 and n6, job B on
# n2 and n7, their lanes over both rails pinned to spine1: the collisions
# are on leaf1's and leaf3's links to spine1, the advice names lanes of
# either rail by their source ports.
FQ_COLL="7 2 3 3" FQ_COLL_PREFIX=scsw exec bash "$(dirname "$0")/test-collision-spine.sh"
