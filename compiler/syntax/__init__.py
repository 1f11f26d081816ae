"""The front end: source bytes → normalised text (`source`) → items (`parse`, with the Lark grammar)
as the AST's nodes (`nodes`); JSON files with located errors (`jsonfile`); the user cache folder
the parser keeps its analysed grammar in (`caches`)."""
