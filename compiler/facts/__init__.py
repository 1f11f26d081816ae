"""The facts every layer reads, and nothing else: the language (`language`), the diagnostic codes
(`codes`) and diagnostics as data (`diagnostics`), "did you mean" (`suggest`), the providers
(`profiles`, over `promptc/data/providers.json`), the configuration's options (`config`), and
promptc's version (`version`). Standard library only; nothing here imports another layer."""
