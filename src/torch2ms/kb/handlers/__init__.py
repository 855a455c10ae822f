"""Transforms and handlers per KB namespace; each module registers with @transform / @handler."""
