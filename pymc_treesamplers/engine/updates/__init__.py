"""Sampler updates of one tree, each registered with the driver for its scratch record: Metropolis-Hastings
(grow/prune, CGM), reshape, Particle Gibbs, continuous-time birth-death, and the single-tree SMC islands."""
