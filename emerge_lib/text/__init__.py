"""Wikitext to passages: the fast cleaner (``wikitext``), the reference cleaner built on
mwparserfromhell that the tests and benchmarks hold it against (``reference``), and page
titles as MediaWiki normalises them (``titles``). Pure functions of strings.

Imports nothing else of emerge_lib.
"""
