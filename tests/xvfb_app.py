"""A small real desktop application for the OSWorld-style wrapper's test (tests/test_plugin_osworld.py).

A Tk window filling the screen, with buttons spaced apart on a plain background. Clicking one
appends its label to the output file and shows "Clicked: LABEL" in the status line. When the
window is on screen it writes every button's box (screen pixels) as JSON to the layout file, which
only the test's demo agent reads (a real agent would look at the screenshot).

    python tests/xvfb_app.py OUTPUT_FILE LAYOUT_FILE [LABEL ...]
"""

from __future__ import annotations

import json
import os
import sys
import tkinter as tk

LABELS = ("Save", "Open", "Print", "Close", "Help", "Undo")
FONT = ("DejaVu Sans", 20, "bold")


def main(argv: list[str]) -> int:
    if len(argv) < 2:
        print(__doc__.strip().splitlines()[-1].strip(), file=sys.stderr)
        return 2
    output, layout = argv[0], argv[1]
    labels = tuple(argv[2:]) or LABELS
    root = tk.Tk()
    root.title("regionfocus test app")
    w, h = root.winfo_screenwidth(), root.winfo_screenheight()
    root.geometry(f"{w}x{h}+0+0")
    root.configure(background="white")
    status = tk.Label(root, text="Ready", font=FONT, background="white")
    status.place(x=20, y=h - 60)
    buttons = {}

    def pressed(label: str) -> None:
        with open(output, "a", encoding="utf-8") as f:
            f.write(label + "\n")
        status.configure(text=f"Clicked: {label}")

    cols = 3
    for i, label in enumerate(labels):
        b = tk.Button(root, text=label, font=FONT, width=6, command=lambda lab=label: pressed(lab))
        b.place(x=60 + (i % cols) * (w - 120) // cols, y=60 + (i // cols) * 160)
        buttons[label] = b

    def announce() -> None:
        root.update_idletasks()
        boxes = {
            label: [
                b.winfo_rootx(),
                b.winfo_rooty(),
                b.winfo_rootx() + b.winfo_width(),
                b.winfo_rooty() + b.winfo_height(),
            ]
            for label, b in buttons.items()
        }
        tmp = layout + ".tmp"
        with open(tmp, "w", encoding="utf-8") as f:
            json.dump(boxes, f)
        os.replace(tmp, layout)

    root.after(300, announce)
    root.mainloop()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
