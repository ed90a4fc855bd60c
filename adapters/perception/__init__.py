"""What a screen says, read without a VLM: OCR lines, a UI element detector, the screen
description a text-only agent is given."""
