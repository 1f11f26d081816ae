"""The compile's back stages, after the passes (run in order by `promptc.compile.pipeline.BACK`):
the request settled and checked (`request`), the artifact made (`emit`) and metered (`meter`),
where the cache-stable prefix ends and W710 (`prefix`), `/// param:` values typed by the provider profile (`params`), budgets (`budget`), and the warnings a
`/// promptc: allow` comment or the project's `allow` leaves out (`suppress`)."""
