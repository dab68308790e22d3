"""tools/check_galaxy_deps.py finds the collections a collection's files use, and only those, with file and line."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import check_galaxy_deps as deps
import pytest

GALAXY = """\
---
namespace: sparkops
name: inference
version: 1.0.0
dependencies:
  ansible.posix: ">=2.0.0"
  ansible.utils: ">=5.0.0"
"""
KNOWN = {"ansible.posix", "ansible.utils", "community.docker", "community.crypto"}


def write(root: Path, rel: str, text: str) -> None:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text))


def uses_in(root: Path, known: set[str] | None = None) -> list[tuple[str, str, str, int]]:
    uses, problems = deps.scan(root, KNOWN if known is None else known)
    assert problems == []
    return [(u.collection, u.name, u.kind, u.line) for u in uses if u.collection not in ("ansible.builtin", "sparkops.inference")]


@pytest.fixture()
def root(tmp_path: Path) -> Path:
    write(tmp_path, "galaxy.yml", GALAXY)
    return tmp_path


def test_task_modules_filters_tests_and_lookups(root: Path) -> None:
    write(
        root,
        "roles/r/tasks/main.yml",
        """\
        ---
        - name: Authorise
          ansible.posix.authorized_key:
            user: root
            key: "{{ lookup('community.crypto.gpg_fingerprint', 'k') }}"
        - name: Check
          ansible.builtin.assert:
            that:
              - ip is ansible.utils.ipv4_address
              - other is not ansible.utils.ipv6_address
          when: x | community.general.json_query('a') | length > 0
        """,
    )
    assert uses_in(root) == [
        ("ansible.posix", "ansible.posix.authorized_key", "module", 3),
        ("community.crypto", "community.crypto.gpg_fingerprint", "lookup", 5),
        ("ansible.utils", "ansible.utils.ipv4_address", "test", 9),
        ("ansible.utils", "ansible.utils.ipv6_address", "test", 10),
        ("community.general", "community.general.json_query", "filter", 11),
    ]


def test_templates_and_block_scalars(root: Path) -> None:
    write(root, "roles/r/templates/netplan.yaml.j2", "a: 1\n# | not.a.filter outside jinja\nb: {{ ip }}/{{ net | ansible.utils.ipaddr('prefix') }}\n")
    write(
        root,
        "roles/r/tasks/main.yml",
        """\
        ---
        - name: Query
          ansible.builtin.debug:
            msg: |
              first line
              {{ query('community.docker.docker_containers') }}
        """,
    )
    assert uses_in(root) == [
        ("community.docker", "community.docker.docker_containers", "lookup", 6),
        ("ansible.utils", "ansible.utils.ipaddr", "filter", 3),
    ]


def test_dotted_variables_shell_pipes_and_settings_are_not_uses(root: Path) -> None:
    write(
        root,
        "roles/r/tasks/main.yml",
        """\
        ---
        - name: Facts and hostvars
          ansible.builtin.debug:
            msg: "{{ ansible_facts.default_ipv4.address }} {{ hostvars[h].model_sync_keypair.public_key | default('') }}"
          when: model_sync_key_dir_stat.stat.exists and a.b.c is defined
        - name: A shell pipe is not Jinja
          ansible.builtin.shell:
            cmd: "cat model.safetensors.index | python3 -m json.tool | some.dotted.cmd"
        """,
    )
    write(root, "roles/r/defaults/main.yml", "---\nr_sysctl:\n  - net.ipv4.ip_forward: 1\n  - net.core.rmem_max: 4194304\nr_file: model.safetensors.index\n")
    write(root, "roles/r/meta/argument_specs.yml", "---\nargument_specs:\n  main:\n    description: See M(community.docker.docker_container) and a.b.c.\n")
    assert uses_in(root) == []


def test_unknown_collection_counts_where_only_a_collection_can_be(root: Path) -> None:
    write(
        root,
        "roles/r/tasks/main.yml",
        """\
        ---
        - name: Module of a collection that is not installed
          acme.widgets.frobnicate:
            level: 3
        - acme.widgets.quiet: {}
        """,
    )
    # The first has task keywords; the second is a bare dotted key of an unknown collection: not read as a module.
    assert uses_in(root) == [("acme.widgets", "acme.widgets.frobnicate", "module", 3)]
    assert uses_in(root, KNOWN | {"acme.widgets"})[-1] == ("acme.widgets", "acme.widgets.quiet", "module", 5)


def test_roles_playbooks_actions_and_keywords(root: Path) -> None:
    write(
        root,
        "playbooks/site.yml",
        """\
        ---
        - name: Other collection's playbook
          ansible.builtin.import_playbook: acme.ops.prepare
        - name: Play
          hosts: all
          collections:
            - community.docker
          module_defaults:
            group/community.docker.docker:
              timeout: 60
          roles:
            - acme.ops.base
            - role: acme.ops.tuned
              tags: [tuned]
          tasks:
            - name: Include
              ansible.builtin.include_role:
                name: acme.ops.extra
            - name: Old style
              action: community.docker.docker_prune images=true
            - name: Mapping style
              local_action:
                module: community.crypto.openssh_keypair
                path: /k
        """,
    )
    write(root, "roles/r/meta/main.yml", "---\ndependencies:\n  - role: acme.deps.common\n")
    found = {(c, n, k) for c, n, k, _line in uses_in(root)}
    assert found == {
        ("acme.ops", "acme.ops.prepare", "playbook"),
        ("community.docker", "community.docker", "collections keyword"),
        ("community.docker", "community.docker.docker", "module defaults"),
        ("acme.ops", "acme.ops.base", "role"),
        ("acme.ops", "acme.ops.tuned", "role"),
        ("acme.ops", "acme.ops.extra", "role"),
        ("community.docker", "community.docker.docker_prune", "module"),
        ("community.crypto", "community.crypto.openssh_keypair", "module"),
        ("acme.deps", "acme.deps.common", "role"),
    }


def test_python_imports_fragments_and_plugin_names(root: Path) -> None:
    write(
        root,
        "plugins/modules/thing.py",
        '''\
        from __future__ import annotations

        DOCUMENTATION = r"""
        module: thing
        short_description: A thing
        extends_documentation_fragment:
          - sparkops.inference._attributes
          - community.docker.docker.api_documentation
        seealso:
          - module: acme.widgets.other
        """
        EXAMPLES = r"""
        - acme.widgets.example: {}
        """
        from ansible_collections.ansible.utils.plugins.module_utils.common.utils import dict_merge
        from ansible_collections.sparkops.inference.plugins.module_utils import _thing
        import ansible_collections.community.crypto.plugins.module_utils.version
        from ansible.module_utils.basic import AnsibleModule

        RUNS = "ansible.posix.mount"
        TEXT = "model.safetensors.index"
        ''',
    )
    assert uses_in(root) == [
        ("community.docker", "community.docker.docker.api_documentation", "doc fragment", 8),
        ("ansible.utils", "ansible_collections.ansible.utils.plugins.module_utils.common.utils", "python import", 15),
        ("community.crypto", "ansible_collections.community.crypto.plugins.module_utils.version", "python import", 17),
        ("ansible.posix", "ansible.posix.mount", "plugin name", 20),
    ]


def test_compare_reports_undeclared_and_unused_with_file_and_line(root: Path) -> None:
    write(root, "roles/r/tasks/main.yml", "---\n- name: Pull\n  community.docker.docker_image_pull:\n    name: x\n")
    write(root, "roles/r/templates/t.j2", "{{ net | ansible.utils.ipaddr('prefix') }}\n")
    declared = deps.read_declared(root)
    uses = deps.scan(root, KNOWN)[0]
    found = [str(p) for p in deps.compare(declared, uses)]
    assert found == [
        "roles/r/tasks/main.yml:3: community.docker.docker_image_pull (module) is from community.docker, which galaxy.yml's dependencies do not list",
        "galaxy.yml:6: dependency ansible.posix (>=2.0.0) is used by no file of the artifact (roles, playbooks, plugins, meta, site.yml)",
    ]


def test_installed_collection_reads_manifest(tmp_path: Path) -> None:
    info = {"namespace": "sparkops", "name": "inference", "version": "1.0.0", "dependencies": {"ansible.utils": ">=5.0.0"}}
    (tmp_path / "MANIFEST.json").write_text(json.dumps({"collection_info": info}))
    play = "---\n- name: Check\n  hosts: all\n  tasks:\n    - name: T\n      ansible.builtin.assert:\n        that: x is ansible.utils.ipv4_address\n"
    write(tmp_path, "site.yml", play)
    declared = deps.read_declared(tmp_path)
    assert (declared.source, declared.fqcn) == ("MANIFEST.json", "sparkops.inference")
    assert deps.compare(declared, deps.scan(tmp_path, KNOWN)[0]) == []


def test_files_outside_the_artifact_roots_are_not_read(root: Path) -> None:
    write(root, "molecule/default/converge.yml", "---\n- name: T\n  containers.podman.podman_container:\n    name: x\n")
    write(root, "tests/unit/x.py", "import ansible_collections.community.general.plugins\n")
    write(root, "roles/r/tasks/main.yml", "---\n- name: T\n  ansible.posix.sysctl:\n    name: net.ipv4.ip_forward\n")
    write(root, "roles/r/__pycache__/x.py", "import ansible_collections.community.general\n")
    assert uses_in(root) == [("ansible.posix", "ansible.posix.sysctl", "module", 3)]


def test_unreadable_yaml_is_a_problem(root: Path) -> None:
    write(root, "roles/r/tasks/main.yml", "---\n- name: T\n  ansible.builtin.debug: [unclosed\n")
    problems = deps.scan(root, KNOWN)[1]
    assert [p.path for p in problems] == ["roles/r/tasks/main.yml"]


def test_main(root: Path, capsys: pytest.CaptureFixture[str]) -> None:
    collections = root / "cols"
    (collections / "ansible_collections" / "ansible" / "posix").mkdir(parents=True)
    write(root, "roles/r/tasks/main.yml", "---\n- name: T\n  ansible.posix.sysctl:\n    name: vm.swappiness\n")
    assert deps.main(["--root", str(root), "--collections-path", str(collections)]) == 1
    assert "galaxy.yml:7: dependency ansible.utils (>=5.0.0) is used by no file" in capsys.readouterr().err
    write(root, "roles/r/tasks/more.yml", "---\n- name: T\n  ansible.builtin.assert:\n    that: x is ansible.utils.ipv4_address\n")
    assert deps.main(["--root", str(root), "--collections-path", str(collections)]) == 0
    assert "ansible.posix (1), ansible.utils (1)" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("text", "expression", "found"),
    [
        ("{{ a | ns.coll.f }}", False, [("filter", "ns.coll.f")]),
        ("{{ a|ns.coll.f(1) | ns.coll.g }}", False, [("filter", "ns.coll.f"), ("filter", "ns.coll.g")]),
        ("a | ns.coll.f", False, []),
        ("a | ns.coll.f", True, [("filter", "ns.coll.f")]),
        ("{% if x is ns.coll.t %}y{% endif %}", False, [("test", "ns.coll.t")]),
        ("{{ q('ns.coll.l', 1) + lookup(\"ns.coll.m\") }}", False, [("lookup", "ns.coll.l"), ("lookup", "ns.coll.m")]),
        ("{{ a.b.c | default(d.e.f) }}", False, []),
        ("{{ x is defined and a.b.c }}", False, []),
        ("{% filter ns.coll.upper %}x{% endfilter %}", False, [("filter", "ns.coll.upper")]),
        ("{{ a | ns.coll.sub.f }}", False, [("filter", "ns.coll.sub.f")]),
    ],
)
def test_jinja_uses(text: str, expression: bool, found: list[tuple[str, str]]) -> None:
    assert sorted((kind, fqcn) for kind, fqcn, _where in deps.jinja_uses(text, expression)) == sorted(found)


def test_an_installed_artifact_against_the_checkouts_galaxy_yml(root: Path, tmp_path_factory: pytest.TempPathFactory) -> None:
    installed = tmp_path_factory.mktemp("installed")
    info = {"namespace": "sparkops", "name": "inference", "version": "1.0.0", "dependencies": {}}
    (installed / "MANIFEST.json").write_text(json.dumps({"collection_info": info}))
    write(installed, "roles/r/tasks/main.yml", "---\n- name: T\n  ansible.posix.sysctl:\n    name: vm.swappiness\n")
    declared = deps.read_declared(installed, root / "galaxy.yml")
    assert declared.dependencies == {"ansible.posix": (">=2.0.0", 6), "ansible.utils": (">=5.0.0", 7)}
    assert [str(p) for p in deps.compare(declared, deps.scan(installed, KNOWN)[0])] == [
        "galaxy.yml:7: dependency ansible.utils (>=5.0.0) is used by no file of the artifact (roles, playbooks, plugins, meta, site.yml)"
    ]
