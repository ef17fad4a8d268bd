"""The engine: the one object the surfaces call. It opens the store, runs index and search
requests, schedules the background vector fill, and answers documents and change-feed requests.
"""
