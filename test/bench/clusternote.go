package main

// clusterNote starts the note of rows measured with -cluster: the local
// cluster's controllers, scheduler and kwok share the machine, and the
// product's Deployments get pods.
const clusterNote = "On the local cluster (controller manager, scheduler, kwok)."
