"""The duration plan (longest first, balanced, interleaved) and the xdist scheduler that follows
it, with fake xdist nodes (the Scheduling protocol only)."""

from __future__ import annotations

import pytest

from pytest_vibecheck.execute.calibrate import ExpectedTime
from pytest_vibecheck.execute.schedule import UNKNOWN_S, cost, interleave, plan
from pytest_vibecheck.plugin.xdist_sched import SEND_AHEAD, DurationScheduling, worker_number


def test_cost_of_sleepers_unknown_and_skipped_items() -> None:
    assert cost(None) == UNKNOWN_S and cost(None, runs=6) == 6 * UNKNOWN_S
    assert cost(ExpectedTime(10.0, 9.0, "reference")) == 10.0
    assert cost(ExpectedTime(73.0, 0.09, "reference")) == 73.0 * 0.25  # sleeps
    assert cost(ExpectedTime(73.0, 0.09, "reference"), runnable=False) == 0.01


def test_plan_balances_long_items_and_keeps_counts_equal() -> None:
    # the case: four sleep-bound tasks and many short ones, 2 workers
    costs = [0.3] * 20 + [73.0, 25.0, 20.0, 20.0]
    plans = plan(costs, 2)
    assert sorted(len(p) for p in plans) == [12, 12]
    loads = [sum(costs[i] for i in p) for p in plans]
    assert plans[0][0] == 20 and 21 in plans[1] and 22 in plans[1] and 23 in plans[1]
    assert max(loads) == pytest.approx(73.0 + 0.3 * 11)  # the 73 s task alone with short ones
    for p in plans:  # each worker's list is longest first
        assert [costs[i] for i in p] == sorted((costs[i] for i in p), reverse=True)
    order = interleave(plans)
    assert sorted(order) == list(range(24))
    assert [order[p] for p in range(0, 24, 2)] == plans[0]
    assert [order[p] for p in range(1, 24, 2)] == plans[1]
    # three workers, counts 3/3/2: worker p % 3 owns position p
    plans3 = plan([1.0] * 8, 3)
    assert [len(p) for p in plans3] == [3, 3, 2]
    order3 = interleave(plans3)
    assert [order3[p] for p in range(2, 8, 3)] == plans3[2]


class _Node:
    def __init__(self, wid: str) -> None:
        self.workerinput = {"workerid": wid}
        self.shutting_down = False
        self.sent: list[int] = []

    def send_runtest_some(self, indices: list[int]) -> None:
        self.sent.extend(indices)

    def shutdown(self) -> None:
        self.shutting_down = True


def _sched(n_nodes: int, n_items: int) -> tuple[DurationScheduling, list[_Node]]:
    sched = DurationScheduling.__new__(DurationScheduling)
    sched.numnodes = n_nodes
    sched.node2collection, sched.node2pending, sched.node2queue = {}, {}, {}
    sched.pending, sched.collection = [], None
    nodes = [_Node(f"gw{i}") for i in reversed(range(n_nodes))]  # any order
    for node in nodes:
        sched.add_node(node)
        sched.add_node_collection(node, [f"t{i}" for i in range(n_items)])
    assert sched.collection_is_completed
    sched.schedule()
    return sched, sorted(nodes, key=lambda n: str(n.workerinput["workerid"]))


def test_scheduler_sends_each_worker_its_positions_then_steals_unsent_ones() -> None:
    sched, (a, b) = _sched(2, 400)
    assert a.sent == list(range(0, 2 * SEND_AHEAD, 2)) and b.sent[:2] == [1, 3]
    # b finishes everything sent, then everything of its own plan, then takes a's unsent tail
    while sched.node2queue[b] or sched.node2pending[b]:
        for i in list(sched.node2pending[b]):
            sched.mark_test_complete(b, i)
    stolen = b.sent[-1]
    assert stolen % 2 == 0  # one of a's positions, never one already sent to a
    assert not set(a.sent) & set(b.sent)
    # finish a; at the end both are shut down and every item ran exactly once
    while sched.has_pending:
        for node in (a, b):
            for i in list(sched.node2pending[node]):
                sched.mark_test_complete(node, i)
    assert sorted(a.sent + b.sent) == list(range(400))
    assert a.shutting_down and b.shutting_down and sched.tests_finished


def test_a_crashed_node_returns_its_items_to_the_others() -> None:
    sched, (a, b) = _sched(2, 10)
    crash = sched.remove_node(a)
    assert crash == "t0"
    while sched.has_pending:
        for i in list(sched.node2pending[b]):
            sched.mark_test_complete(b, i)
    assert sorted(b.sent) == [i for i in range(10) if i != 0]
    assert worker_number("gw12") == 12 and worker_number("main") is None
