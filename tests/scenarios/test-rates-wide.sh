#!/usr/bin/env bash
# test-rates.sh on a wider fabric than its own: 7 hosts x 2 rails on 3
# leaves (3, 2 and 2 hosts) and 1 spine. The jobs' hosts are the first two
# of leaf1 (n1, n2) and of leaf3 (n6, n7), the shaped links leaf1-spine1
# and leaf3-spine1, and every connection's lanes on both rails cross them:
# the controller must give the bulk job a rate on each rail's paths both
# ways, and the lanes of both rails together stay within the link's budget.
FQ_RATES="7 2 3" FQ_RATES_PREFIX=ratw exec bash "$(dirname "$0")/test-rates.sh"
