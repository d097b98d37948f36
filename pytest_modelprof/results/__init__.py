"""What a gated run produced, below both the gate that makes it and the reports that read it:
the record of one gated profile, the results document of a run, and merging CI shards."""
