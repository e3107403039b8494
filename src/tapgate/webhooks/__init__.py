"""tapgate.webhooks: inbound taps from LINE (``webhooks.line``) and Slack (``webhooks.slack``).

Nothing is exported here: the server imports the module of each platform its
config enables, so a LINE-only deployment never loads slack-bolt.
"""

__all__: list[str] = []
