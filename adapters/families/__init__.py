"""Model families: each one's prompts (official text, cited), answer parser and coordinate frame."""
