"""``interact_messages.json`` in the shape the official WebVoyager auto-evaluation reads.

Facts relied on, from MinorJerry/WebVoyager at commit 5a7896738c10bfb8b9edccce6bb0e0411f8ae569
(He et al., 2024):

- ``evaluation/auto_eval.py`` takes the task from message 1 (its first text part when the
  content is a list) with ``r"Now given a task:(.+?)Please interact with"``, which does not
  cross a newline, so the task goes on one line;
- it takes the answer from the *last* message only: no ``'Action: ANSWER'`` substring there
  means "not answered" (score 0, no judge call); otherwise the answer is group 1 of the first
  match of ``r"ANSWER[; ]+\\[?(.[^\\]]*)\\]?"`` anywhere in that message, stripped. The search is
  case-sensitive and starts at the top of the message, so a model's thought that says "ANSWER"
  before the real action line would be taken for the answer, and an answer is cut at its
  first "]";
- ``utils.py`` ``print_message`` writes the file with ``json.dump(..., indent=2)`` (so ASCII
  only: non-ASCII characters are ``\\uXXXX`` escapes) and replaces each image's base64 with the
  literal placeholder ``data:image/png;base64,{b64_img}``; screenshots are read from the
  ``screenshot{n}.png`` files beside it, not from the messages;
- ``prompts.py`` asks the model for ``ANSWER; [content]`` as the final action.

So the files we write follow that, and guard the two traps: the thought (and any other free
text before or in a non-answer action line) never contains "ANSWER" or "Action:", and the
final answer is written ``ANSWER; [text]`` with each "]" of the text replaced by the
look-alike "］" (U+FF3D), so the official regex reads back the whole answer. ``call_user``
ends a task without an answer: its action line is ``CallUser``, never ANSWER, and the run's
results.json has ``answer: null`` and ``ended: "call_user"``.
"""

from __future__ import annotations

from pathlib import Path

from regionfocus.actions import Action, ActionType

from .rundir import write_json

SYSTEM = (
    "You are a web agent operating a browser from screenshots. Each turn you receive the "
    "current screenshot and reply with a short thought and one action on it. Points are pixels "
    "of the screenshot. When the task is complete, answer with ANSWER; [your answer]."
)
IMAGE_PLACEHOLDER = "data:image/png;base64,{b64_img}"
OBSERVATION = "Observation: the attached screenshot shows the current page. Give your Thought and Action."
FILENAME = "interact_messages.json"
# What the official answer regex stops at, and what stands for it in a written answer.
ANSWER_STOP, ANSWER_STOP_STANDIN = "]", "\uff3d"


def _defuse(text: str) -> str:
    """Free text that cannot pose as the harness's own lines: the official check is for
    "Action: ANSWER" and its regex for a case-sensitive "ANSWER" followed by ";" or a space."""
    return text.replace("ANSWER", "Answer").replace("Action:", "Action -")


def final_answer(action: Action | None) -> str | None:
    """The answer a run records for ``action`` (results.json ``answer``): the text of a
    FINISHED action that has any; None for everything else, call_user included."""
    if action is None or action.type != ActionType.FINISHED or not action.text.strip():
        return None
    return action.text


def action_line(action: Action | None) -> str:
    """One action in the official runner's vocabulary, with pixel points instead of labels."""
    if action is None:
        return "None (no parseable action)"
    p = f"({action.point.x:.0f}, {action.point.y:.0f})" if action.point is not None else ""
    t = action.type
    if t == ActionType.FINISHED:
        answer = final_answer(action)
        if answer is None:  # the official runner never ends on an empty answer; no judge call
            return "Finished (no answer text)"
        return f"ANSWER; [{answer.strip().replace(ANSWER_STOP, ANSWER_STOP_STANDIN)}]"
    if t == ActionType.TYPE:
        text = _defuse(action.text.replace("\n", " "))
        return f"Type {p or '[focused]'}; {text}" + (" [ENTER]" if action.submit else "")
    if t == ActionType.SCROLL:
        return f"Scroll {p or '[WINDOW]'}; {action.direction or 'down'}"
    if t == ActionType.WAIT:
        return "Wait"
    if t == ActionType.BACK:
        return "GoBack"
    if t == ActionType.HOTKEY:
        return "Hotkey " + "+".join(action.keys)
    if t == ActionType.DRAG and action.end_point is not None:
        return f"Drag {p} -> ({action.end_point.x:.0f}, {action.end_point.y:.0f})"
    if t == ActionType.CALL_USER:
        return "CallUser"
    name = {
        ActionType.CLICK: "Click",
        ActionType.DOUBLE_CLICK: "DoubleClick",
        ActionType.RIGHT_CLICK: "RightClick",
        ActionType.MIDDLE_CLICK: "MiddleClick",
        ActionType.HOVER: "Hover",
    }.get(t, t.value)
    return f"{name} {p}".strip()


def _thought(raw: str) -> str:
    """The model's own reply, on one line, unable to pose as an answer or an action line."""
    return _defuse(" ".join(raw.split()))[:2000]


def _lead(task: str, start_url: str) -> str:
    return f"Now given a task: {task}  Please interact with {start_url} and get the answer. \n"


def interact_messages(task_text: str, start_url: str, steps: list[dict]) -> list[dict]:
    """The conversation: system, then per step a user turn (observation + image placeholder)
    and an assistant turn ``Thought: ...\\n\\nAction: ...``. ``steps``: dicts with ``text``
    (the raw model reply) and ``action`` (an Action or None)."""
    task = " ".join(task_text.split())
    messages: list[dict] = [{"role": "system", "content": SYSTEM}]
    for i, step in enumerate(steps):
        lead = _lead(task, start_url) if i == 0 else ""
        messages.append(
            {
                "role": "user",
                "content": [
                    {"type": "text", "text": lead + OBSERVATION},
                    {"type": "image_url", "image_url": {"url": IMAGE_PLACEHOLDER}},
                ],
            }
        )
        messages.append(
            {
                "role": "assistant",
                "content": f"Thought: {_thought(step.get('text', ''))}\n\nAction: {action_line(step.get('action'))}",
            }
        )
    if not steps:  # the task never reached the model: still name it, as the script expects
        messages.append({"role": "user", "content": [{"type": "text", "text": _lead(task, start_url)}]})
    return messages


def write_interact_messages(folder: str | Path, task_text: str, start_url: str, steps: list[dict]) -> Path:
    """Write ``folder/interact_messages.json`` as the official runner does (indent 2, ASCII
    with ``\\uXXXX`` escapes) and return its path. Arguments as :func:`interact_messages`."""
    path = Path(folder) / FILENAME
    write_json(path, interact_messages(task_text, start_url, steps), ascii=True)
    return path
