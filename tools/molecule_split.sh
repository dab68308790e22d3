#!/usr/bin/env bash
# A Molecule scenario as several stages of `make test` (tools/test_stages.py), so that its lab's creation and converge
# run beside other stages and only what must run alone runs alone:
#   tools/molecule_split.sh up SCENARIO       destroy what a run left, then converge (dependency, create, prepare,
#                                             converge)
#   tools/molecule_split.sh part SCENARIO NAME KEYWORDS [side-effect]
#                                             the side effect when asked, then verify the tests pytest's `-k KEYWORDS`
#                                             selects (their JUnit file: molecule-SCENARIO-NAME.xml); the lab stays up
#   tools/molecule_split.sh finish SCENARIO [NAME KEYWORDS]
#                                             the side effect and every test (or only the part NAME KEYWORDS: no side
#                                             effect), then cleanup and destroy whatever happened
# `part` and `finish` converge first when no `up` ran (a stage run alone), and fail at once when it failed. Together
# the steps of `molecule test` but its syntax step (make test's playbook-syntax stage checks every playbook).
set -u
action=${1:?up, part or finish} scenario=${2:?scenario}
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

# verify [NAME KEYWORDS]: molecule verify, of the tests `-k KEYWORDS` selects when given (PYTEST_ADDOPTS reaches the
# testinfra verifier's pytest; SPARKOPS_MOLECULE_JUNIT names the part's JUnit file, molecule-SCENARIO-NAME.xml).
verify() {
    if [[ $# -eq 2 ]]; then
        SPARKOPS_MOLECULE_JUNIT="molecule-$scenario-$1.xml" PYTEST_ADDOPTS="${PYTEST_ADDOPTS:-} -k '$2'" molecule verify -s "$scenario"
    else
        molecule verify -s "$scenario"
    fi
}

# converged: 0 when the scenario's lab converged (converging it when no `up` ran), else 1 saying so.
converged() {
    if [[ ! -e $marker ]]; then
        up
    fi
    if [[ $(cat "$marker") != ok ]]; then
        echo "molecule_split: $scenario did not converge (its up stage failed): no side effect or verify" >&2
        return 1
    fi
}

case $action in
up)
    up
    ;;
part)
    name=${3:?part name} keywords=${4:?pytest -k keywords}
    converged || exit 1
    if [[ ${5:-} == side-effect ]]; then
        molecule side-effect -s "$scenario" || exit 1
    fi
    verify "$name" "$keywords"
    ;;
finish)
    if converged; then
        if [[ $# -ge 4 ]]; then
            verify "$3" "$4"
        else
            molecule side-effect -s "$scenario" && verify
        fi
        rc=$?
    else
        rc=1
    fi
    rm -f "$marker"
    molecule destroy -s "$scenario" || rc=1
    exit "$rc"
    ;;
*)
    echo "usage: $0 up|part|finish SCENARIO ..." >&2
    exit 2
    ;;
esac
