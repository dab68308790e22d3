#!/usr/bin/env bash
# A Molecule scenario as two stages of `make test` (tools/test_stages.py), so that its lab's creation and converge run
# beside other stages and only what must run alone (its side effect and its verifier) runs alone:
#   tools/molecule_split.sh up SCENARIO       destroy what a run left, then converge (dependency, create, prepare,
#                                             converge)
#   tools/molecule_split.sh finish SCENARIO   side_effect and verify, then cleanup and destroy whatever happened;
#                                             converges first when no `up` ran (a stage run alone)
# Together the steps of `molecule test` but its syntax step (make test's playbook-syntax stage checks every playbook).
set -u
action=${1:?up or finish} scenario=${2:?scenario}
marker="${SPARKOPS_JUNIT_DIR:-/tmp}/molecule-$scenario.up"

up() {
    rm -f "$marker"
    if molecule destroy -s "$scenario" && molecule converge -s "$scenario"; then
        echo ok >"$marker"
    else
        echo failed >"$marker"
        return 1
    fi
}

case $action in
up)
    up
    ;;
finish)
    if [[ ! -e $marker ]]; then
        up
    fi
    if [[ $(cat "$marker") != ok ]]; then
        echo "molecule_split: $scenario did not converge (its up stage failed): no side effect or verify" >&2
        rc=1
    else
        molecule side-effect -s "$scenario" && molecule verify -s "$scenario"
        rc=$?
    fi
    rm -f "$marker"
    molecule destroy -s "$scenario" || rc=1
    exit "$rc"
    ;;
*)
    echo "usage: $0 up|finish SCENARIO" >&2
    exit 2
    ;;
esac
