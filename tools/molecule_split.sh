#!/usr/bin/env bash
# A Molecule scenario as several stages of `make test` (tools/test_stages.py), so that its lab's creation and converge
# run beside other stages, the tests that must run alone run alone, and the others beside other stages again:
#   tools/molecule_split.sh up SCENARIO                 destroy what a run left, then converge (dependency, create,
#                                                       prepare, converge)
#   tools/molecule_split.sh verify SCENARIO PART FILE...  the side effect (once: before the first part), then the
#                                                       verifier over these test files only (SPARKOPS_VERIFY_FILES, read
#                                                       by the scenario's tests/conftest.py; none named: every one); the
#                                                       lab stays up
#   tools/molecule_split.sh finish SCENARIO PART FILE...  as verify, then cleanup and destroy, whatever happened
# verify and finish converge first when no `up` ran (a stage run alone). Each part's JUnit XML is
# molecule-SCENARIO-PART.xml in SPARKOPS_JUNIT_DIR. Together the steps of `molecule test` but its syntax step (make
# test's playbook-syntax stage checks every playbook); the parts, in the order make test runs them, cover every test
# file of the scenario (tests/unit/tools/test_molecule_split.py checks that).
set -u
action=${1:?up, verify or finish} scenario=${2:?scenario}
junit_dir=${SPARKOPS_JUNIT_DIR:-/tmp}
marker="$junit_dir/molecule-$scenario.up"

up() {
    rm -f "$marker"
    if molecule destroy -s "$scenario" && molecule converge -s "$scenario"; then
        echo ok >"$marker"
    else
        echo failed >"$marker"
        return 1
    fi
}

# The side effect (once), then the verifier over the part's files; its JUnit XML under the part's name.
verify_part() {
    local part=$1
    shift
    if [[ ! -e $marker ]]; then
        up
    fi
    if [[ $(head -n 1 "$marker") != ok ]]; then
        echo "molecule_split: $scenario did not converge (its up stage failed): no side effect or verify" >&2
        return 1
    fi
    if ! grep -qx side_effect "$marker"; then
        molecule side-effect -s "$scenario" || return 1
        echo side_effect >>"$marker"
    fi
    SPARKOPS_VERIFY_FILES="$*" molecule verify -s "$scenario"
    local rc=$?
    if [[ -e "$junit_dir/molecule-$scenario.xml" ]]; then
        mv "$junit_dir/molecule-$scenario.xml" "$junit_dir/molecule-$scenario-$part.xml"
    fi
    return "$rc"
}

case $action in
up)
    up
    ;;
verify)
    verify_part "${3:?part}" "${@:4}"
    ;;
finish)
    verify_part "${3:?part}" "${@:4}"
    rc=$?
    rm -f "$marker"
    molecule destroy -s "$scenario" || rc=1
    exit "$rc"
    ;;
*)
    echo "usage: $0 up SCENARIO | verify SCENARIO PART FILE... | finish SCENARIO PART FILE..." >&2
    exit 2
    ;;
esac
