"""GCP harnesses: the emulator launcher (emulators) and the emulated platform (platform)."""
