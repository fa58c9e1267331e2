# Makes the repository root importable (`import minicalc`) however pytest is started.
