"""The command line: `scholarflow ask | resume | route | sessions | ingest | search`."""
