"""App templates for `unumctl init` (package data; unumctl/init.py reads them with
importlib.resources). One directory per template: `template.json` ({"description": one
line}) and the files of a working app, where `__APP__` stands for the app's name."""
