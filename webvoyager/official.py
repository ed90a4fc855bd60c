"""``interact_messages.json`` in the shape the official WebVoyager auto-evaluation reads.

What the official script relies on (He et al., 2024; ``evaluation/auto_eval.py``):
- message 1 is the user's first turn; its first text part contains "Now given a task:" and the
  task up to "Please interact with", on one line (the script's regex does not cross newlines);
- the *last* message carries "Action: ANSWER; <answer>" when the agent answered; anything else
  is scored as not answered;
- screenshots are read from ``screenshot{n}.png`` files beside it, not from the messages, so
  the official runner (and we) replace each image's base64 with the literal placeholder
  ``data:image/png;base64,{b64_img}`` to keep the file small.
"""

from __future__ import annotations

from regionfocus.actions import Action, ActionType

SYSTEM = (
    "You are a web agent operating a browser from screenshots. Each turn you receive the "
    "current screenshot and reply with a short thought and one action on it. Points are pixels "
    "of the screenshot. When the task is complete, answer with ANSWER; followed by the answer."
)
IMAGE_PLACEHOLDER = "data:image/png;base64,{b64_img}"
OBSERVATION = "Observation: the attached screenshot shows the current page. Give your Thought and Action."


def action_line(action: Action | None) -> str:
    """One action in the official runner's vocabulary, with pixel points instead of labels."""
    if action is None:
        return "None (no parseable action)"
    p = f"({action.point.x:.0f}, {action.point.y:.0f})" if action.point is not None else ""
    t = action.type
    if t == ActionType.FINISHED:
        text = " ".join(action.text.split())
        return f"ANSWER; {text or '(empty)'}"
    if t == ActionType.TYPE:
        text = action.text.replace("\n", " ")
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
    # The script looks for "Action: ANSWER" in the last message only; keep a model's own
    # "Action:" lines from posing as ours.
    return " ".join(raw.replace("Action:", "Action -").split())[:2000]


def interact_messages(task_text: str, start_url: str, steps: list[dict]) -> list[dict]:
    """The conversation: system, then per step a user turn (observation + image placeholder)
    and an assistant turn ``Thought: ...\\n\\nAction: ...``. ``steps``: dicts with ``text``
    (the raw model reply) and ``action`` (an Action or None)."""
    task = " ".join(task_text.split())
    messages: list[dict] = [{"role": "system", "content": SYSTEM}]
    for i, step in enumerate(steps):
        lead = (
            f"Now given a task: {task}  Please interact with {start_url} and get the answer. \n"
            if i == 0
            else ""
        )
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
        messages.append(
            {
                "role": "user",
                "content": [
                    {
                        "type": "text",
                        "text": f"Now given a task: {task}  Please interact with {start_url} and get the answer. \n",
                    }
                ],
            }
        )
    return messages
