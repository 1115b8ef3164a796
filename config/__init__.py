"""What a running firstfault is configured with: the settings model and the version. Imports nothing but schemas,
so every layer that takes settings (api, workers, notifiers' wiring, runtime) can import it."""
