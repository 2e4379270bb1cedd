"""What the tests share that is not a fixture: tiny models, a fake OpenAI-compatible
server, a hash-scored backend, the CLI in a child process."""
