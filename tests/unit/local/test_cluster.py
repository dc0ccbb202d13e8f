"""A local cluster's layout without starting it: each node's ports, data dir and properties,
the replication the topics get on it, and the errors that say what to give instead."""

from __future__ import annotations

import pytest
from streamxai.kafka.config import replication
from streamxai.local.broker import LocalBroker, main
from streamxai.local.broker_tls import BrokerTls
from streamxai.schemas import ConfigError
from streamxai.settings import Settings


def _props(node: LocalBroker) -> dict[str, str]:
    return dict(ln.split("=", 1) for ln in node.server_properties().splitlines() if "=" in ln and ln[0] != "#")


def test_each_node_has_its_ports_dir_and_id_and_every_node_is_a_voter(tmp_path):
    b = LocalBroker(30000, 30100, data_dir=tmp_path, nodes=3, node_ports=[(30000, 30100), (30001, 30101), (30002, 30102)])
    assert b.bootstrap == "127.0.0.1:30000,127.0.0.1:30001,127.0.0.1:30002"
    props = [_props(n) for n in b.nodes]
    assert [p["node.id"] for p in props] == ["1", "2", "3"]
    assert {p["controller.quorum.voters"] for p in props} == {"1@127.0.0.1:30100,2@127.0.0.1:30101,3@127.0.0.1:30102"}
    assert [p["listeners"] for p in props][2] == "PLAINTEXT://127.0.0.1:30002,CONTROLLER://127.0.0.1:30102"
    assert len({p["log.dirs"] for p in props}) == 3 and all(str(tmp_path) in p["log.dirs"] for p in props)
    for key, want in (("default.replication.factor", "3"), ("min.insync.replicas", "2"),
                      ("offsets.topic.replication.factor", "3"), ("transaction.state.log.min.isr", "2"),
                      ("unclean.leader.election.enable", "false")):
        assert {p[key] for p in props} == {want}, key


def test_one_node_keeps_its_replication_of_one(tmp_path):
    p = _props(LocalBroker(30000, 30001, data_dir=tmp_path))
    assert (p["node.id"], p["controller.quorum.voters"]) == ("1", "1@127.0.0.1:30001")
    assert (p["default.replication.factor"], p["min.insync.replicas"], p["offsets.topic.replication.factor"]) == \
        ("1", "1", "1")


@pytest.mark.parametrize("kwargs, fragment", [
    (dict(port=30000, controller_port=30002, nodes=3), "controller_port = port + 1"),
    (dict(port=30000, controller_port=30001, nodes=2, node_ports=[(30000, 30001)]), "1 pairs of ports for 2 nodes"),
    (dict(port=30000, controller_port=30001, node_ports=[(30000, 30001)]), "give nodes > 1"),
    (dict(port=30000, controller_port=30001, nodes=0), "nodes must be an int in 1..9"),
    (dict(port=30000, controller_port=30001, nodes=3, tls=BrokerTls("a", "b", "c")), "PLAINTEXT only"),
])
def test_a_layout_that_cannot_run_is_refused(tmp_path, kwargs, fragment):
    with pytest.raises(ValueError) as e:
        LocalBroker(data_dir=tmp_path, **kwargs)
    assert fragment in str(e.value)


def test_node_control_is_for_a_cluster(tmp_path):
    b = LocalBroker(30000, 30001, data_dir=tmp_path, nodes=3)
    with pytest.raises(ValueError, match="node_id must be 1..3"):
        b.stop_node(0)
    with pytest.raises(ValueError, match="are for a cluster"):
        LocalBroker(30000, 30001, data_dir=tmp_path / "one").stop_node(1)
    assert b.stop_node(2, kill=True) is False and b.stop() is False  # nothing runs: nothing stopped
    assert not b.status().running and not b.status().ready


def test_the_command_line_finds_a_clusters_nodes_and_refuses_kill_without_a_node(tmp_path, capsys):
    for i in (1, 2, 3):
        (tmp_path / f"node-{i}").mkdir()
        (tmp_path / f"node-{i}" / "server.properties").write_text("")
    assert main(["status", "--data-dir", str(tmp_path), "--port", "30000", "--controller-port", "30001"]) == 3
    assert capsys.readouterr().out.startswith("cluster of 3 nodes, 0 ready, bootstrap 127.0.0.1:30000,")
    assert main(["stop", "--kill", "--data-dir", str(tmp_path)]) == 2
    assert "--kill needs --node ID" in capsys.readouterr().err


def test_topics_get_the_replication_the_cluster_allows_unless_the_settings_say():
    assert replication(Settings(), 3) == (3, 2) and replication(Settings(), 1) == (1, 1)
    assert replication(Settings(), 2) == (2, 1)
    assert replication(Settings(replication_factor=3, min_insync_replicas=3), 4) == (3, 3)
    with pytest.raises(ConfigError, match="needs at least 3 brokers"):
        replication(Settings(replication_factor=3), 1)
    with pytest.raises(ConfigError, match="must be at most replication_factor"):
        Settings(replication_factor=2, min_insync_replicas=3)
