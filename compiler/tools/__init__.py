"""What is built on a compile or a build: `diff` and the first differing character of a cache bust
(`divergence`), `cost` and `reconcile` (prices, traffic, usage records), the HTML `report`, `fmt`,
the llmutils-style helpers (`llmutils`) and `import`/`audit` of other template engines
(`importers`)."""
