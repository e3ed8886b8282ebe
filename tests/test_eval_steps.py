"""The steps set's scorer (bench/eval_steps.py)."""

from __future__ import annotations

from dataclasses import replace

from bench.eval_steps import Step, StepTask, dev_misses, held_out, load_tasks, score_task, summarize


def _task() -> StepTask:
    return StepTask(id="reviewer-08", shard="reviewer", task="Review PR 1 and post a review.", steps=(
        Step("read the PR", "read", ("gh/get_pr",)),
        Step("read its files", "read", ("gh/get_pr_files", "gh/get_pr")),
        Step("post the review", "send", ("gh/create_review",), role_may=False),
        Step("run the tests", "execute", ())), forbidden=("gh/merge",))


def test_a_step_is_covered_by_any_of_its_tools_in_full_and_refused_or_toolless_steps_are_apart():
    row = score_task(_task(), ["gh/get_pr", "gh/merge"], ["reviewer may not send messages: the step 'post'"],
                     full_tokens=300)
    assert (row["covered"], row["scored"], row["complete"], row["held_out"]) == (2, 2, True, True)
    assert row["forbidden_full"] == ["gh/merge"]
    refused, toolless = row["steps"][2], row["steps"][3]
    assert refused["warned"] is True and toolless["warned"] is False
    summary = summarize([row, score_task(_task(), ["gh/get_pr_files", "gh/create_review"])])
    assert summary["steps"] == 4 and summary["steps_covered"] == 3 / 4
    assert summary["tasks_complete"] == 1 / 2
    assert summary["full_tools"] == 2 and summary["full_tokens"] == 150
    assert (summary["role_may_not"], summary["role_may_not_in_full"], summary["role_may_not_warned"]) == (2, 1, 1)
    assert (summary["no_tool"], summary["no_tool_warned"]) == (2, 0)


def test_the_held_out_part_is_every_fourth_task_and_the_set_loads():
    assert held_out("coder-04") and held_out("tester-20") and not held_out("coder-03")
    tasks = load_tasks()
    assert len(tasks) == 88 and sum(held_out(t.id) for t in tasks) == 20


def test_the_dev_misses_list_names_the_development_parts_missed_steps_and_no_held_out_task():
    dev = score_task(StepTask(id="reviewer-07", shard="reviewer", task="t", steps=_task().steps), ["gh/merge"])
    out = dev_misses([score_task(_task(), []), dev, score_task(replace(_task(), id="reviewer-05"), ["gh/get_pr"])])
    assert out.splitlines() == ["reviewer-07 (reviewer): Full gh/merge", "  missed /read: read the PR",
                                "  missed /read: read its files"]  # held out, or missing nothing: not listed
